"""Invariants of `uscf-cc` (US Chess correspondence) through the one engine, for any stream of
games and seeding rows (hypothesis), checked on the engine's output and on the states it keeps
(docs/systems/uscf-cc.md, "Rules and readings", "Input" and "State and events, with an example";
docs/contract-v2.md, "Every v2 event")."""

import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.correspondence_game import CorrespondenceGameFinished
from schemas.rating_changed_v2 import CcRatingChanged
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, Verdict
from worker.engine.events_v2 import read_cc
from worker.rules.hundredths import Hundredths, Points
from worker.rules.system import SeedRow
from worker.rules.uscf_cc import CcRules, CcState
from worker.store.state_codec import CC_STATES

PLAYERS = [f"p{i}" for i in range(6)]
CATEGORY = "correspondence"
# Every termination of the input contract: forfeit and aborted often, so that both kinds of
# forfeit and the skips are common.
TERMINATIONS = [
    "checkmate",
    "resignation",
    "timeout",
    "forfeit",
    "forfeit",
    "forfeit",
    "aborted",
    "stalemate",
    "draw_agreement",
]
# Correspondence controls (days per move) and a live one: time_control is validated, then ignored (U16).
CONTROLS = [(259200, 0), (86400, 0), (1209600, 0), (180, 2)]
ABSENT = None  # forfeit_kind left out of the message

seeds = st.lists(
    st.builds(
        SeedRow,
        player_id=st.sampled_from(PLAYERS),
        category=st.just(CATEGORY),
        # Anywhere (negative ratings included: no floor, U12), or next to the K boundaries.
        rating=st.one_of(
            st.integers(-50000, 300000),
            st.integers(205000, 215000),
            st.integers(235000, 245000),
        ).map(Hundredths),
        # Provisional, on the 24/25/26 threshold, or established.
        rated_games=st.one_of(st.integers(1, 60), st.integers(23, 26)),
    ),
    max_size=6,
    unique_by=lambda r: r.player_id,
)


@st.composite
def game_values(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Messages of valid games (a drawn special forfeit is bad input: never made here)."""
    out = []
    for i in range(draw(st.integers(0, 50))):
        white, black = draw(st.lists(st.sampled_from(PLAYERS), min_size=2, max_size=2, unique=True))
        base, increment = draw(st.sampled_from(CONTROLS))
        termination = draw(st.sampled_from(TERMINATIONS))
        kind = draw(st.sampled_from([ABSENT, "ordinary", "special"]))
        results = ["1-0", "0-1"] if termination == "forfeit" and kind == "special" else ["1-0", "0-1", "1/2-1/2"]
        value: dict[str, Any] = {
            "event_id": f"e{i}",
            "game_id": f"g{i}",
            "finished_at": "2026-11-29T10:00:00Z",
            "rated": draw(st.integers(0, 9)) > 0,
            "time_control": {"base_seconds": base, "increment_seconds": increment},
            "white_id": white,
            "black_id": black,
            "result": draw(st.sampled_from(results)),
            "termination": termination,
        }
        if kind is not ABSENT:
            value["forfeit_kind"] = kind
        out.append(value)
    return out


def parse(value: dict[str, Any]) -> CorrespondenceGameFinished:
    return CorrespondenceGameFinished.model_validate_json(json.dumps(value))


def new_store() -> Ratings[CcState]:
    return Ratings(Engine(CcRules(), Points(1200)))


def replay(
    seed_rows: Iterable[SeedRow], stream: Iterable[CorrespondenceGameFinished]
) -> tuple[list[bytes], Ratings[CcState]]:
    store = new_store()
    payloads = []
    for row in seed_rows:
        update = store.seed(row).update
        assert update is not None  # a rating never seen is always seeded
        payloads.append(update.payload)
    for game in stream:
        payloads.extend(u.payload for u in store.apply(game).updates)
    return payloads, store


def hundredths(value: Decimal | None) -> Hundredths | None:
    if value is None:
        return None
    assert value == value.quantize(Decimal("0.01"))
    return Hundredths(int(value * 100))


def is_special_forfeit(game: CorrespondenceGameFinished) -> bool:
    return game.termination == "forfeit" and game.forfeit_kind == "special"


def redeliveries(value: dict[str, Any]) -> list[dict[str, Any]]:
    """The same game sent again, differing at most in what is no fact (docs/systems/uscf-cc.md,
    "Input"): forfeit_kind on a game that is not a forfeit; on a forfeit, an absent kind for
    "ordinary" and back; the event id and an unknown field."""
    same = [dict(value), {**value, "event_id": "again", "unknown": 1}]
    without = {k: v for k, v in value.items() if k != "forfeit_kind"}
    if value["termination"] != "forfeit":
        same += [without, {**value, "forfeit_kind": "ordinary"}, {**value, "forfeit_kind": "special"}]
    elif value.get("forfeit_kind", "ordinary") == "ordinary":
        same += [without, {**value, "forfeit_kind": "ordinary"}]
    return same


@settings(max_examples=200, deadline=None)
@given(seeds, game_values())
def test_replaying_a_stream_twice_gives_identical_bytes(seed_rows: list[SeedRow], values: list[dict[str, Any]]) -> None:
    first, _ = replay(seed_rows, map(parse, values))
    second, _ = replay(seed_rows, map(parse, values))
    assert first == second


@settings(max_examples=200, deadline=None)
@given(seeds, game_values(), st.data())
def test_a_duplicate_changes_nothing_and_publishes_nothing(
    seed_rows: list[SeedRow], values: list[dict[str, Any]], data: st.DataObject
) -> None:
    if not values:
        return
    stream = [parse(v) for v in values]
    original, store = replay(seed_rows, stream)
    states, records = dict(store.states), dict(store.games)
    index = data.draw(st.integers(0, len(values) - 1))
    again = parse(data.draw(st.sampled_from(redeliveries(values[index]))))
    outcome = store.apply(again)
    assert outcome.verdict is Verdict.DUPLICATE
    assert outcome.updates == ()
    assert store.states == states
    assert store.games == records
    # And inside the stream, anywhere after the original: the same output as without it.
    at = data.draw(st.integers(index + 1, len(stream)))
    with_redelivery, _ = replay(seed_rows, [*stream[:at], again, *stream[at:]])
    assert with_redelivery == original


@settings(max_examples=200, deadline=None)
@given(seeds, game_values())
def test_each_rating_changes_in_gapless_seq_from_its_previous_rating(
    seed_rows: list[SeedRow], values: list[dict[str, Any]]
) -> None:
    payloads, store = replay(seed_rows, map(parse, values))
    previous: dict[str, CcRatingChanged] = {}
    for payload in payloads:
        # Every payload is a valid event of contract v2 (nulls by kind included).
        event = CcRatingChanged.model_validate_json(payload)
        key = f"{event.player_id}/{event.category}"
        last = previous.get(key)
        assert event.seq == event.state.seq == (1 if last is None else last.seq + 1)
        # A rating's first event starts from none (a seeding of an unseen rating, or a first rating).
        assert event.rating_before == (None if last is None else last.rating_after)
        if event.kind == "first_rating":
            assert event.rating_before is None
        assert event.rating_after == event.state.rating
        previous[key] = event
    assert {k: e.seq for k, e in previous.items()} == {k: s.seq for k, s in store.states.items()}
    for key, state in store.states.items():
        last = previous[key]
        assert (state.rating, state.credits) == (hundredths(last.state.rating), last.state.rated_games)
        assert state.rating == hundredths(last.rating_after)


@settings(max_examples=200, deadline=None)
@given(seeds, game_values())
def test_each_events_state_is_what_a_restore_would_store(
    seed_rows: list[SeedRow], values: list[dict[str, Any]]
) -> None:
    store = new_store()

    def check(key: str, payload: bytes) -> None:
        published = read_cc(payload)
        assert published.key == key
        assert published.state == store.states[key]
        assert CC_STATES.decode(CC_STATES.encode(store.states[key])) == store.states[key]

    for row in seed_rows:
        update = store.seed(row).update
        assert update is not None
        check(update.key, update.payload)
    for game in map(parse, values):
        # A game changes each of its two distinct ratings at most once: its states right after
        # each event are the states after the game.
        for update in store.apply(game).updates:
            check(update.key, update.payload)


@settings(max_examples=200, deadline=None)
@given(seeds, game_values())
def test_a_game_changes_at_most_its_two_players_and_a_special_forfeit_only_its_winner(
    seed_rows: list[SeedRow], values: list[dict[str, Any]]
) -> None:
    store = new_store()
    for row in seed_rows:
        store.seed(row)
    for game in map(parse, values):
        before = dict(store.states)
        outcome = store.apply(game)
        changed = {k for k in store.states if store.states[k] != before.get(k)}
        assert changed == {u.key for u in outcome.updates}
        players = {f"{game.white_id}/{CATEGORY}", f"{game.black_id}/{CATEGORY}"}
        assert changed <= players
        if outcome.verdict is not Verdict.APPLIED:
            assert not changed
        if not game.rated or game.termination == "aborted":
            assert outcome.verdict is Verdict.SKIPPED and not changed  # section 4, steps 3 and 4
        elif is_special_forfeit(game):
            winner = game.white_id if game.result == "1-0" else game.black_id
            winner_key = f"{winner}/{CATEGORY}"
            assert changed <= {winner_key}
            if changed:  # the forfeit points, no game credit (section 8)
                assert store.states[winner_key].credits == before[winner_key].credits
        else:
            # Every other game is rated, an ordinary forfeit included: both players change (section 9).
            assert outcome.verdict is Verdict.APPLIED and changed == players
