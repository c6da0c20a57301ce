"""Invariants that hold for any stream of games (hypothesis), checked on the engine's output."""

import json
from collections import defaultdict
from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.game_finished import GameFinished
from schemas.rating_changed import RatingChanged
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, SeedRow, Verdict
from worker.rules.arena import FLOOR, ArenaRules
from worker.rules.categories import Category
from worker.rules.hundredths import Points

PLAYERS = [f"p{i}" for i in range(6)]
# Rated controls of each category, and two the arena does not rate.
CONTROLS = [(180, 2), (900, 10), (60, 0), (300, 0), (240, 0), (1800, 30)]
TERMINATIONS = ["checkmate", "resignation", "timeout", "disconnection", "forfeit", "aborted", "stalemate"]

seeds = st.lists(
    st.builds(
        SeedRow,
        player_id=st.sampled_from(PLAYERS),
        category=st.sampled_from(list(Category)),
        # Near the floor as often as not, so ratings are lost and won back.
        rating=st.one_of(st.integers(100000, 103000), st.integers(100000, 260000)),
        rated_games=st.integers(0, 40),
    ),
    max_size=12,
    unique_by=lambda r: r.key,
)


@st.composite
def games(draw: st.DrawFn) -> list[GameFinished]:
    n = draw(st.integers(0, 60))
    out = []
    for i in range(n):
        white, black = draw(st.lists(st.sampled_from(PLAYERS), min_size=2, max_size=2, unique=True))
        base, increment = draw(st.sampled_from(CONTROLS))
        game = {
            "event_id": f"e{i}",
            "game_id": f"g{i}",
            "finished_at": "2026-11-29T10:00:00Z",
            "rated": draw(st.booleans().map(lambda b: b or draw(st.integers(0, 9)) > 0)),
            "time_control": {"base_seconds": base, "increment_seconds": increment},
            "white_id": white,
            "black_id": black,
            "result": draw(st.sampled_from(["1-0", "0-1", "1/2-1/2"])),
            "termination": draw(st.sampled_from(TERMINATIONS)),
        }
        out.append(GameFinished.model_validate_json(json.dumps(game)))
    return out


def replay(seed_rows: Iterable[SeedRow], stream: Iterable[GameFinished]) -> tuple[list[bytes], Ratings]:
    store = Ratings(Engine(ArenaRules(), Points(1200)))
    payloads = []
    for row in seed_rows:
        update = store.seed(row).update
        assert update is not None
        payloads.append(update.payload)
    for game in stream:
        payloads.extend(u.payload for u in store.apply(game).updates)
    return payloads, store


def events(payloads: list[bytes]) -> list[RatingChanged]:
    # Every payload must be a valid event of the contract, nulls by kind included.
    return [RatingChanged.model_validate_json(p) for p in payloads]


@settings(max_examples=300, deadline=None)
@given(seeds, games())
def test_replaying_a_stream_twice_gives_identical_bytes(seed_rows: list[SeedRow], stream: list[GameFinished]) -> None:
    first, _ = replay(seed_rows, stream)
    second, _ = replay(seed_rows, stream)
    assert first == second


@settings(max_examples=300, deadline=None)
@given(seeds, games(), st.data())
def test_a_duplicate_game_changes_nothing_and_publishes_nothing(
    seed_rows: list[SeedRow], stream: list[GameFinished], data: st.DataObject
) -> None:
    if not stream:
        return
    original, store = replay(seed_rows, stream)
    states_before = dict(store.states)
    again = data.draw(st.sampled_from(stream))
    outcome = store.apply(again)
    assert outcome.verdict is Verdict.DUPLICATE
    assert outcome.updates == ()
    assert store.states == states_before
    # And inside the stream: the same output as without the redelivery.
    at = data.draw(st.integers(stream.index(again) + 1, len(stream)))
    with_redelivery, _ = replay(seed_rows, [*stream[:at], again, *stream[at:]])
    assert with_redelivery == original


@settings(max_examples=300, deadline=None)
@given(seeds, games())
def test_each_rating_changes_in_gapless_seq_from_its_previous_state(
    seed_rows: list[SeedRow], stream: list[GameFinished]
) -> None:
    payloads, store = replay(seed_rows, stream)
    previous: dict[str, RatingChanged] = {}
    for event in events(payloads):
        key = f"{event.player_id}/{event.category}"
        last = previous.get(key)
        assert event.seq == (1 if last is None else last.seq + 1)
        # rating_before is the previous rating_after (both null while unrated).
        assert event.rating_before == (None if last is None else last.state.rating)
        assert event.rating_after == event.state.rating
        previous[key] = event
    assert {k: e.seq for k, e in previous.items()} == {k: s.seq for k, s in store.states.items()}


@settings(max_examples=300, deadline=None)
@given(seeds, games())
def test_a_rated_player_never_holds_a_rating_under_1000(seed_rows: list[SeedRow], stream: list[GameFinished]) -> None:
    _, store = replay(seed_rows, stream)
    for payload in replay(seed_rows, stream)[0]:
        event = RatingChanged.model_validate_json(payload)
        if event.state.rating is not None:
            assert event.state.rating >= 1000
    assert all(s.rating is None or s.rating >= FLOOR for s in store.states.values())


@settings(max_examples=300, deadline=None)
@given(seeds, games())
def test_in_a_rated_game_with_equal_k_the_deltas_sum_to_zero(
    seed_rows: list[SeedRow], stream: list[GameFinished]
) -> None:
    payloads, _ = replay(seed_rows, stream)
    by_game: dict[str, list[RatingChanged]] = defaultdict(list)
    for event in events(payloads):
        if event.kind == "rated_game" and event.game_id is not None:
            by_game[event.game_id].append(event)
    for pair in by_game.values():
        if len(pair) == 2 and pair[0].k_factor == pair[1].k_factor:
            assert pair[0].delta is not None and pair[1].delta is not None
            assert pair[0].delta + pair[1].delta == 0
            assert pair[0].expected_score is not None and pair[1].expected_score is not None
            assert pair[0].expected_score + pair[1].expected_score == 1


@settings(max_examples=300, deadline=None)
@given(seeds, games())
def test_a_game_changes_at_most_its_two_players_in_its_category(
    seed_rows: list[SeedRow], stream: list[GameFinished]
) -> None:
    store = Ratings(Engine(ArenaRules(), Points(1200)))
    for row in seed_rows:
        store.seed(row)
    for game in stream:
        before = dict(store.states)
        outcome = store.apply(game)
        changed = {k for k in store.states if store.states[k] != before.get(k)}
        assert changed == {u.key for u in outcome.updates}
        assert all(k.split("/")[0] in (game.white_id, game.black_id) for k in changed)
        assert len({k.split("/")[1] for k in changed}) <= 1
        if outcome.verdict is not Verdict.APPLIED:
            assert not changed
