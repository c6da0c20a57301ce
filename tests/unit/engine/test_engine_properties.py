"""The arena's own invariants for any stream of games (hypothesis), checked on the engine's output:
the floor, opposite deltas, a game changing only its players' ratings in its category.

What holds for every system (a replay twice gives the same bytes, a redelivery changes nothing,
`seq` gapless, events valid and read back as `restore` reads them, the state's Redis encoding) is
the contract suite's (tests/unit/contract/), over these streams too (tests/support/arena_streams.py)."""

from collections import defaultdict
from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.game_finished import GameFinished
from schemas.rating_changed import RatingChanged
from tests.support.arena_streams import game_values, parse, seeds
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, SeedRow, Verdict
from worker.rules.hundredths import Points
from worker.systems.arena.rules import FLOOR
from worker.systems.arena.state import RatingState
from worker.systems.registry import ARENA


@st.composite
def games(draw: st.DrawFn) -> list[GameFinished]:
    return [parse(value) for value in draw(game_values())]


def replay(seed_rows: Iterable[SeedRow], stream: Iterable[GameFinished]) -> tuple[list[bytes], Ratings[RatingState]]:
    store = Ratings(Engine(ARENA, Points(1200)))
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
    store = Ratings(Engine(ARENA, Points(1200)))
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
