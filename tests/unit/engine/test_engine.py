"""The engine (through the in-memory store): sequence numbers, event ids, duplicates, seeding,
the displays and the per-kind null table of docs/contract.md ("Output: `arena.rating.changed.v1`").

Every payload is also validated against schemas.RatingChanged (which checks the null table).
"""

import json
from typing import Any

import pytest

from schemas.game_finished import GameFinished
from schemas.rating_changed import RatingChanged
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, SeedRow, SeedVerdict, Update, Verdict
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths, Points, display
from worker.rules.interface import Kind, Skip
from worker.systems.arena.state import UNSEEN, QualifyingGame, RatingState
from worker.systems.registry import ARENA

BLITZ, RAPID = Category.BLITZ, Category.RAPID
FINISHED_AT = "2026-11-29T21:44:51Z"


def new_store(training_rating: int = 1200) -> Ratings[RatingState]:
    return Ratings(Engine(ARENA, training_rating=Points(training_rating)))


def make_game(
    game_id: str,
    white: str,
    black: str,
    result: str = "1-0",
    *,
    base_seconds: int = 180,  # 3+0: blitz
    increment_seconds: int = 0,
    rated: bool = True,
    termination: str = "checkmate",
    event_id: str | None = None,
    finished_at: str = FINISHED_AT,
) -> GameFinished:
    return GameFinished.model_validate_json(
        json.dumps(
            {
                "event_id": event_id or f"ev-{game_id}",
                "game_id": game_id,
                "finished_at": finished_at,
                "rated": rated,
                "time_control": {"base_seconds": base_seconds, "increment_seconds": increment_seconds},
                "white_id": white,
                "black_id": black,
                "result": result,
                "termination": termination,
            }
        )
    )


def seed(
    store: Ratings[RatingState], player: str, rating: int, rated_games: int = 40, category: Category = BLITZ
) -> Update[RatingState]:
    outcome = store.seed(SeedRow(player, category, Hundredths(rating), rated_games))
    assert outcome.verdict == SeedVerdict.IMPORTED
    assert outcome.update is not None
    return outcome.update


def doc(update: Update[RatingState]) -> dict[str, Any]:
    """The payload as JSON, after checking it against the contract's schema."""
    RatingChanged.model_validate_json(update.payload)
    parsed: dict[str, Any] = json.loads(update.payload)
    return parsed


def applied(store: Ratings[RatingState], game: GameFinished) -> dict[str, Update[RatingState]]:
    outcome = store.apply(game)
    assert outcome.verdict == Verdict.APPLIED, outcome
    return {u.event.player_id: u for u in outcome.updates}


GAME_FIELDS = ("game_id", "source_event_id", "opponent_id", "score", "finished_at")


def every_kind(training_rating: int = 1200) -> dict[str, Update[RatingState]]:
    """One update of each kind, from the worked examples of docs/systems/arena.md ("Rules and readings")."""
    store = new_store(training_rating)
    out: dict[str, Update[RatingState]] = {}
    out["imported"] = seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    # Example 1: 1800.00 beats 1700.00 -> 1807.20.
    out["rated_game"] = applied(store, make_game("g-ab", "alice", "bob"))["alice"]
    # Example 4: newbie vs 1500..1900 with 0.5, 1, 1, 0, 0.5 -> 1720.00.
    for i, (rating, result) in enumerate(
        zip([150000, 160000, 170000, 180000, 190000], ["1/2-1/2", "1-0", "1-0", "0-1", "1/2-1/2"], strict=True), 1
    ):
        seed(store, f"o{i}", rating)
        kind = "qualifying_game" if i < 5 else "first_rating"
        out[kind] = applied(store, make_game(f"g-n{i}", "newbie", f"o{i}", result))["newbie"]
    # Example 5: S = 1.5 against Ra = 1100.00 -> 951.00: reset (weak plays black).
    seed(store, "r1", 110000)
    for i, result in enumerate(["1/2-1/2", "1/2-1/2", "1/2-1/2", "1-0", "1-0"], 1):
        update = applied(store, make_game(f"g-w{i}", "r1", "weak", result))["weak"]
    out["qualification_reset"] = update
    # Example 6: 1003.00, K = 20, loses to an equal opponent -> 993.00: rating lost.
    seed(store, "erin", 100300, rated_games=30)
    seed(store, "frank", 100300, rated_games=30)
    out["rating_lost"] = applied(store, make_game("g-ef", "erin", "frank", "0-1"))["erin"]
    return out


# --- seq -----------------------------------------------------------------------------------


def test_seq_increments_by_one_per_change_of_each_rating() -> None:
    store = new_store()
    assert seed(store, "alice", 180000).state.seq == 1
    assert seed(store, "bob", 170000).state.seq == 1
    assert seed(store, "alice", 150000, category=RAPID).state.seq == 1  # another rating: its own seq
    for n, result in enumerate(["1-0", "0-1", "1/2-1/2"], start=2):
        updates = applied(store, make_game(f"g{n}", "alice", "bob", result))
        for update in updates.values():
            assert update.state.seq == update.event.seq == doc(update)["seq"] == doc(update)["state"]["seq"] == n
    assert store.states["alice/blitz"].seq == store.states["bob/blitz"].seq == 4
    assert store.states["alice/rapid"].seq == 1


def test_seq_counts_each_qualifying_change_and_not_an_uncounted_loss() -> None:
    store = new_store()
    seed(store, "o", 150000)
    # A loss before the count starts changes nothing: no event, no seq.
    outcome = store.apply(make_game("g0", "newbie", "o", "0-1"))
    assert (outcome.verdict, outcome.skip, outcome.updates) == (Verdict.SKIPPED, Skip.NOT_COUNTED, ())
    assert "newbie/blitz" not in store.states
    seqs = [applied(store, make_game(f"g{i}", "newbie", "o", "1-0"))["newbie"].state.seq for i in range(1, 6)]
    assert seqs == [1, 2, 3, 4, 5]
    # The rated opponent's seq never moved (his state never changes in these games).
    assert store.states["o/blitz"] == RatingState(rating=Hundredths(150000), rated_games=40, seq=1)


def test_seq_after_a_lost_rating_continues() -> None:
    update = every_kind()["rating_lost"]
    assert update.state == RatingState(rating=None, rated_games=0, qualifying=(), seq=2)


# --- ids and keys --------------------------------------------------------------------------


def test_game_event_ids_are_game_id_slash_player_id_and_keys_player_slash_category() -> None:
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    updates = applied(store, make_game("game-7", "alice", "bob"))
    assert [u.event.event_id for u in updates.values()] == ["game-7/alice", "game-7/bob"]
    assert [u.key for u in updates.values()] == ["alice/blitz", "bob/blitz"]
    assert [doc(u)["event_id"] for u in updates.values()] == ["game-7/alice", "game-7/bob"]


def test_import_event_ids_are_import_player_category_seq() -> None:
    store = new_store()
    first = seed(store, "alice", 180000, category=RAPID)
    assert (first.event.event_id, first.key) == ("import/alice/rapid/1", "alice/rapid")
    seed(store, "bob", 170000, category=RAPID)
    applied(store, make_game("g1", "alice", "bob", base_seconds=900))  # 15+0: rapid, seq 2
    forced = store.seed(SeedRow("alice", RAPID, Hundredths(200000), 0), force=True)
    assert forced.update is not None
    assert forced.update.event.event_id == doc(forced.update)["event_id"] == "import/alice/rapid/3"


# --- duplicates ----------------------------------------------------------------------------


def test_a_duplicate_game_is_reported_with_no_updates_and_changes_no_state() -> None:
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    game = make_game("g1", "alice", "bob")
    applied(store, game)
    states = dict(store.states)
    again = store.apply(game)
    assert (again.verdict, again.skip, again.updates) == (Verdict.DUPLICATE, Skip.DUPLICATE, ())
    assert store.states == states


def test_a_redelivery_with_another_event_id_and_finish_time_is_still_a_duplicate() -> None:
    # The facts are white_id, black_id, result, termination, rated, time_control (docs/contract.md,
    # "Duplicates and the idempotency record").
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    applied(store, make_game("g1", "alice", "bob"))
    again = store.apply(make_game("g1", "alice", "bob", event_id="other", finished_at="2027-01-01T00:00:00Z"))
    assert (again.verdict, again.updates) == (Verdict.DUPLICATE, ())


@pytest.mark.parametrize(
    "changed",
    [
        {"result": "0-1"},
        {"result": "1/2-1/2"},
        {"termination": "resignation"},
        {"termination": "forfeit"},
        {"rated": False},
        {"base_seconds": 300},
        {"increment_seconds": 2},
        {"white": "bob", "black": "alice"},
        {"black": "carol"},
    ],
)
def test_the_same_game_id_with_other_facts_is_a_conflict_and_changes_nothing(changed: dict[str, Any]) -> None:
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    seed(store, "carol", 160000)
    applied(store, make_game("g1", "alice", "bob"))
    states = dict(store.states)
    white, black = changed.pop("white", "alice"), changed.pop("black", "bob")
    outcome = store.apply(make_game("g1", white, black, **changed))
    assert (outcome.verdict, outcome.updates) == (Verdict.CONFLICT, ())
    assert str(outcome.verdict) == "conflicting_duplicate"  # the dead-letter error.kind
    assert store.states == states


@pytest.mark.parametrize(
    ("game", "skip"),
    [
        (make_game("g1", "alice", "bob", rated=False), Skip.RATED_FALSE),
        (make_game("g1", "alice", "bob", termination="forfeit"), Skip.FORFEIT),
        (make_game("g1", "alice", "bob", termination="aborted"), Skip.ABORTED),
        (make_game("g1", "alice", "bob", base_seconds=180, increment_seconds=1), Skip.UNRATED_TIME_CONTROL),
        (make_game("g1", "carol", "dave"), Skip.BOTH_UNRATED),
        (make_game("g1", "carol", "alice", "0-1"), Skip.NOT_COUNTED),
    ],
)
def test_a_game_that_changes_nothing_is_still_recorded(game: GameFinished, skip: Skip) -> None:
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    states = dict(store.states)
    first = store.apply(game)
    assert (first.verdict, first.skip, first.updates) == (Verdict.SKIPPED, skip, ())
    assert store.states == states
    # Replayed: a duplicate; with other facts: a conflict (so it was recorded).
    assert store.apply(game).verdict == Verdict.DUPLICATE
    other = game.model_copy(update={"result": "1/2-1/2" if game.result != "1/2-1/2" else "1-0"})
    assert store.apply(other).verdict == Verdict.CONFLICT
    assert store.states == states


def test_engine_apply_compares_the_recorded_digest() -> None:
    engine = Engine(ARENA, training_rating=Points(1200))
    game = make_game("g1", "alice", "bob")
    states = {
        "alice/blitz": RatingState(Hundredths(180000), 40, (), 1),
        "bob/blitz": RatingState(Hundredths(170000), 40, (), 1),
    }
    fresh = engine.apply(game, states, None)
    assert fresh.verdict == Verdict.APPLIED
    assert engine.apply(game, states, fresh.digest).verdict == Verdict.DUPLICATE
    assert engine.apply(make_game("g1", "alice", "bob", "0-1"), states, fresh.digest).verdict == Verdict.CONFLICT
    # The digest depends on the facts only, not on event_id or finished_at.
    assert engine.apply(make_game("g1", "alice", "bob", event_id="x"), states, None).digest == fresh.digest


# --- seeding -------------------------------------------------------------------------------


def test_seeding_an_unseen_rating_imports_it() -> None:
    store = new_store()
    outcome = store.seed(SeedRow("alice", BLITZ, Hundredths(180000), 12))
    assert outcome.verdict == SeedVerdict.IMPORTED
    assert outcome.update is not None
    assert outcome.update.state == RatingState(rating=Hundredths(180000), rated_games=12, qualifying=(), seq=1)
    assert store.states["alice/blitz"] == outcome.update.state
    assert outcome.update.event.kind == Kind.IMPORTED


def test_seeding_a_rating_with_state_is_refused_unless_forced() -> None:
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    applied(store, make_game("g1", "alice", "bob"))  # alice: 1807.20, 41 games, seq 2
    before = store.states["alice/blitz"]
    refused = store.seed(SeedRow("alice", BLITZ, Hundredths(200000), 5))
    assert (refused.verdict, refused.update) == (SeedVerdict.REFUSED, None)
    assert store.states["alice/blitz"] == before
    forced = store.seed(SeedRow("alice", BLITZ, Hundredths(200000), 5), force=True)
    assert forced.verdict == SeedVerdict.IMPORTED
    assert forced.update is not None
    assert forced.update.state == RatingState(rating=Hundredths(200000), rated_games=5, qualifying=(), seq=3)
    assert store.states["alice/blitz"] == forced.update.state
    # rating_before = previous rating 1807.20; delta = 2000.00 - 1807.20 = 192.80.
    d = doc(forced.update)
    assert (d["rating_before"], d["rating_after"], d["delta"]) == (1807.2, 2000.0, 192.8)
    assert (d["display_before"], d["display_after"]) == (1807, 2000)


def test_seeding_a_player_in_qualification_is_refused_and_forcing_drops_his_count() -> None:
    store = new_store()
    seed(store, "o", 150000)
    applied(store, make_game("g1", "newbie", "o", "1-0"))
    assert store.seed(SeedRow("newbie", BLITZ, Hundredths(140000), 0)).verdict == SeedVerdict.REFUSED
    forced = store.seed(SeedRow("newbie", BLITZ, Hundredths(140000), 0), force=True)
    assert forced.update is not None
    assert forced.update.state == RatingState(rating=Hundredths(140000), rated_games=0, qualifying=(), seq=2)
    d = doc(forced.update)
    assert (d["rating_before"], d["delta"], d["display_before"]) == (None, None, 1200)


def test_seeding_after_a_lost_rating_is_refused_unless_forced() -> None:
    # The lost rating still has state (seq 2), although unrated.
    store = new_store()
    seed(store, "erin", 100300, 30)
    seed(store, "frank", 100300, 30)
    applied(store, make_game("g1", "erin", "frank", "0-1"))
    assert store.seed(SeedRow("erin", BLITZ, Hundredths(110000), 0)).verdict == SeedVerdict.REFUSED
    assert store.seed(SeedRow("erin", BLITZ, Hundredths(110000), 0), force=True).verdict == SeedVerdict.IMPORTED


@pytest.mark.parametrize("force", [False, True])
def test_seeding_a_row_equal_to_the_current_state_is_unchanged(force: bool) -> None:
    store = new_store()
    seed(store, "alice", 180000, 40)
    before = dict(store.states)
    outcome = store.seed(SeedRow("alice", BLITZ, Hundredths(180000), 40), force=force)
    assert (outcome.verdict, outcome.update) == (SeedVerdict.UNCHANGED, None)
    assert store.states == before


def test_seeding_a_row_that_differs_only_in_rated_games_is_a_change() -> None:
    store = new_store()
    seed(store, "alice", 180000, 40)
    assert store.seed(SeedRow("alice", BLITZ, Hundredths(180000), 41)).verdict == SeedVerdict.REFUSED
    forced = store.seed(SeedRow("alice", BLITZ, Hundredths(180000), 41), force=True)
    assert forced.update is not None
    d = doc(forced.update)
    assert (d["rating_before"], d["rating_after"], d["delta"], d["seq"]) == (1800.0, 1800.0, 0.0, 2)


def test_engine_seed_is_pure_and_reads_the_given_state() -> None:
    engine = Engine(ARENA, training_rating=Points(1200))
    row = SeedRow("alice", BLITZ, Hundredths(180000), 40)
    assert engine.seed(row, UNSEEN).verdict == SeedVerdict.IMPORTED
    assert engine.seed(row, RatingState(Hundredths(180000), 40, (), 7)).verdict == SeedVerdict.UNCHANGED
    assert engine.seed(row, RatingState(Hundredths(170000), 40, (), 7)).verdict == SeedVerdict.REFUSED


# --- displays ------------------------------------------------------------------------------


@pytest.mark.parametrize("training", [1200, 1500])
def test_displays_use_the_training_rating_while_unrated(training: int) -> None:
    kinds = every_kind(training)
    shown = {kind: (u.event.display_before, u.event.display_after) for kind, u in kinds.items()}
    assert shown == {
        "imported": (training, 1800),  # unseen -> 1800.00
        "rated_game": (1800, 1807),  # 1800.00 -> 1807.20
        "qualifying_game": (training, training),
        "first_rating": (training, 1720),  # -> 1720.00 (example 4)
        "qualification_reset": (training, training),
        "rating_lost": (1003, training),  # 1003.00 -> lost (example 6)
    }
    for kind, update in kinds.items():
        assert (doc(update)["display_before"], doc(update)["display_after"]) == shown[kind]


@pytest.mark.parametrize("rating", [-15050, -15049, -1, 0, 49, 50, 179949, 179950, 180049, 180050, 10**12 + 50])
def test_the_engines_display_is_the_rules_display_of_the_rating(rating: int) -> None:
    """Engine.display computes hundredths.display inline (the hot path): the two agree, halves
    upwards, negative ratings (uscf-cc's) included."""
    engine = Engine(ARENA, Points(1200))
    assert engine.display(RatingState(Hundredths(rating), 40, (), 7)) == display(Hundredths(rating))


def test_1799_60_winning_0_60_becomes_1800_20_and_both_display_1800() -> None:
    # Rules 13. K = 20 (30 games), D = 1799.60 - 1260.00 = 539.60 -> 540 -> PD .97: +0.60.
    store = new_store()
    seed(store, "p", 179960, rated_games=30)
    seed(store, "q", 126000, rated_games=30)
    update = applied(store, make_game("g1", "p", "q"))["p"]
    d = doc(update)
    assert (d["rating_before"], d["rating_after"], d["delta"], d["expected_score"]) == (1799.6, 1800.2, 0.6, 0.97)
    assert (d["display_before"], d["display_after"]) == (1800, 1800)
    assert b'"rating_before":1799.60,"rating_after":1800.20,' in update.payload
    assert b'"delta":0.60,"k_factor":20,"expected_score":0.97,' in update.payload


# --- rated against unrated, categories -----------------------------------------------------


def test_only_the_unrated_player_gets_an_event_against_a_rated_one() -> None:
    store = new_store()
    seed(store, "alice", 180000)
    before = store.states["alice/blitz"]
    outcome = store.apply(make_game("g1", "alice", "newbie", "0-1"))
    assert [u.event.player_id for u in outcome.updates] == ["newbie"]
    assert store.states["alice/blitz"] == before
    assert store.states["newbie/blitz"].qualifying == (
        QualifyingGame("g1", "alice", Hundredths(180000), Hundredths(100)),
    )


def test_a_rating_in_one_category_does_not_rate_a_game_of_another() -> None:
    # alice is rated in blitz only; a rapid game against an unrated player: both unrated in rapid.
    store = new_store()
    seed(store, "alice", 180000)
    outcome = store.apply(make_game("g1", "alice", "bob", base_seconds=900))
    assert (outcome.verdict, outcome.skip) == (Verdict.SKIPPED, Skip.BOTH_UNRATED)


def test_losing_a_rating_in_one_category_keeps_the_others() -> None:
    store = new_store()
    seed(store, "erin", 100300, 30)
    seed(store, "frank", 100300, 30)
    seed(store, "erin", 150000, 30, category=RAPID)
    applied(store, make_game("g1", "erin", "frank", "0-1"))
    assert store.states["erin/blitz"].rating is None
    assert store.states["erin/rapid"] == RatingState(rating=Hundredths(150000), rated_games=30, seq=1)


# --- the per-kind null table of docs/contract.md ("Output: `arena.rating.changed.v1`") ------


def test_rated_game_sets_every_field() -> None:
    d = doc(every_kind()["rated_game"])
    assert d == {
        "event_id": "g-ab/alice",
        "game_id": "g-ab",
        "source_event_id": "ev-g-ab",
        "player_id": "alice",
        "opponent_id": "bob",
        "category": "blitz",
        "kind": "rated_game",
        "score": 1,
        "rating_before": 1800.0,
        "rating_after": 1807.2,
        "display_before": 1800,
        "display_after": 1807,
        "delta": 7.2,
        "k_factor": 20,
        "expected_score": 0.64,
        "seq": 2,
        "state": {"status": "rated", "rating": 1807.2, "rated_games": 41, "qualifying": [], "seq": 2},
        "finished_at": FINISHED_AT,
    }


def test_rating_lost_has_no_rating_after_and_no_delta_but_k_and_pd_of_the_game() -> None:
    d = doc(every_kind()["rating_lost"])
    assert (d["kind"], d["rating_before"], d["rating_after"], d["delta"]) == ("rating_lost", 1003.0, None, None)
    assert (d["k_factor"], d["expected_score"], d["score"]) == (20, 0.5, 0)
    assert [d[f] for f in GAME_FIELDS] == ["g-ef", "ev-g-ef", "frank", 0, FINISHED_AT]
    assert d["state"] == {"status": "unrated", "rating": None, "rated_games": 0, "qualifying": [], "seq": 2}


def test_qualifying_game_has_only_game_fields() -> None:
    d = doc(every_kind()["qualifying_game"])  # the 4th counted game of example 4, a loss to o4
    assert d["kind"] == "qualifying_game"
    assert [d[f] for f in ("rating_before", "rating_after", "delta", "k_factor", "expected_score")] == [None] * 5
    assert [d[f] for f in GAME_FIELDS] == ["g-n4", "ev-g-n4", "o4", 0, FINISHED_AT]
    assert d["state"] == {
        "status": "unrated",
        "rating": None,
        "rated_games": 0,
        "qualifying": [
            {"game_id": "g-n1", "opponent_id": "o1", "opponent_rating": 1500.0, "score": 0.5},
            {"game_id": "g-n2", "opponent_id": "o2", "opponent_rating": 1600.0, "score": 1},
            {"game_id": "g-n3", "opponent_id": "o3", "opponent_rating": 1700.0, "score": 1},
            {"game_id": "g-n4", "opponent_id": "o4", "opponent_rating": 1800.0, "score": 0},
        ],
        "seq": 4,
    }


def test_qualification_reset_has_only_game_fields() -> None:
    d = doc(every_kind()["qualification_reset"])
    assert d["kind"] == "qualification_reset"
    assert [d[f] for f in ("rating_before", "rating_after", "delta", "k_factor", "expected_score")] == [None] * 5
    assert [d[f] for f in GAME_FIELDS] == ["g-w5", "ev-g-w5", "r1", 0, FINISHED_AT]
    assert d["state"] == {"status": "unrated", "rating": None, "rated_games": 0, "qualifying": [], "seq": 5}


def test_first_rating_sets_rating_after_only() -> None:
    d = doc(every_kind()["first_rating"])
    assert (d["kind"], d["rating_before"], d["rating_after"], d["delta"]) == ("first_rating", None, 1720.0, None)
    assert (d["k_factor"], d["expected_score"]) == (None, None)
    assert [d[f] for f in GAME_FIELDS] == ["g-n5", "ev-g-n5", "o5", 0.5, FINISHED_AT]
    assert d["state"] == {"status": "rated", "rating": 1720.0, "rated_games": 0, "qualifying": [], "seq": 5}


def test_imported_has_no_game_fields_and_no_k_or_pd() -> None:
    d = doc(every_kind()["imported"])
    assert (d["kind"], d["rating_before"], d["rating_after"], d["delta"]) == ("imported", None, 1800.0, None)
    assert (d["k_factor"], d["expected_score"]) == (None, None)
    assert [d[f] for f in GAME_FIELDS] == [None] * 5
    assert d["state"] == {"status": "rated", "rating": 1800.0, "rated_games": 40, "qualifying": [], "seq": 1}


def test_every_kind_validates_against_the_contract_schema() -> None:
    for kind, update in every_kind().items():
        event = RatingChanged.model_validate_json(update.payload)
        assert event.kind == kind
        assert event.seq == update.state.seq
        assert event.event_id == update.event.event_id


def test_the_output_key_is_player_slash_category_for_every_kind() -> None:
    keys = {kind: u.key for kind, u in every_kind().items()}
    assert keys == {
        "imported": "alice/blitz",
        "rated_game": "alice/blitz",
        "qualifying_game": "newbie/blitz",
        "first_rating": "newbie/blitz",
        "qualification_reset": "weak/blitz",
        "rating_lost": "erin/blitz",
    }


def test_an_engine_that_encodes_no_events_computes_the_same_updates_without_their_bytes() -> None:
    quiet = Engine(ARENA, Points(1200), encode_events=False)
    loud = Engine(ARENA, Points(1200))
    white = RatingState(Hundredths(180000), 40, (), 3)
    black = RatingState(Hundredths(170000), 12, (), 2)
    game = make_game("g1", "w", "b")
    states = {"w/blitz": white, "b/blitz": black}
    got, want = quiet.apply(game, states, None), loud.apply(game, states, None)
    assert got.verdict is want.verdict is Verdict.APPLIED
    assert [(u.key, u.state, u.event) for u in got.updates] == [(u.key, u.state, u.event) for u in want.updates]
    assert [u.payload for u in got.updates] == [b"", b""] and all(u.payload for u in want.updates)
