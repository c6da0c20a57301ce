"""`glicko2`'s own invariants (Glicko-2 game by game) through the one engine, for any stream of
games and seeding rows (hypothesis), checked on the engine's output and on the states it keeps
(docs/systems/glicko2.md, "Rules and readings"): the bounds, the games counted and the time they read.

What holds for every system (a replay twice gives the same bytes, a redelivery changes nothing,
`seq` gapless, events valid and read back as `restore` reads them, the state's Redis encoding) is
the contract suite's (tests/unit/contract/), over these streams too (tests/support/glicko2_streams.py)."""

from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import given, settings

from schemas.rating_changed_v2 import Glicko2RatingChanged
from tests.support.glicko2_streams import INSTANTS, RATED, parse, streams
from tests.support.period_streams import Import, Stream
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, SeedVerdict, Verdict
from worker.rules.hundredths import Hundredths, Points
from worker.systems.glicko2.rules import GlickoState
from worker.systems.registry import GLICKO2

TWO_DECIMALS = Decimal("0.01")


def new_store() -> Ratings[GlickoState]:
    return Ratings(Engine(GLICKO2, Points(1200)))


def hundredths(value: Decimal) -> Hundredths:
    assert value == value.quantize(TWO_DECIMALS)
    return Hundredths(int(value * 100))


def skip_of(value: dict[str, Any]) -> str | None:
    """Section 3, in this order: rated false, forfeit, aborted, a control the arena does not rate."""
    control = (value["time_control"]["base_seconds"], value["time_control"]["increment_seconds"])
    if not value["rated"]:
        return "rated_false"
    if value["termination"] in ("forfeit", "aborted"):
        return str(value["termination"])
    return None if control in RATED else "unrated_time_control"


@settings(max_examples=150, deadline=None)
@given(streams())
def test_the_bounds_the_games_counted_and_the_time_they_read(stream: Stream) -> None:
    store = new_store()
    latest: dict[str, Fraction] = {}  # per rating, the instant of its last_rated_at
    for row in stream.seeds:
        store.seed(row)
    for item in stream.items:
        if isinstance(item, Import):
            if store.seed(item.row, item.force).verdict is SeedVerdict.IMPORTED:
                latest.pop(item.row.key, None)  # a seeded rating has no last_rated_at
            continue
        assert isinstance(item, dict)  # glicko2's streams have no close lines
        before = dict(store.states)
        outcome = store.apply(parse(item))
        skip = skip_of(item)
        if skip is not None:
            assert (outcome.verdict, str(outcome.skip), outcome.updates) == (Verdict.SKIPPED, skip, ())
            continue
        if outcome.verdict is Verdict.SKIPPED:  # the iteration failed: nothing changes
            assert str(outcome.skip) == "not_converged" and outcome.updates == ()
            continue
        category = RATED[(item["time_control"]["base_seconds"], item["time_control"]["increment_seconds"])]
        keys = [f"{item['white_id']}/{category}", f"{item['black_id']}/{category}"]
        assert [u.key for u in outcome.updates] == keys  # white's event, then black's
        at = INSTANTS[item["finished_at"]]
        for update in outcome.updates:
            previous = before.get(update.key, GlickoState())
            event = Glicko2RatingChanged.model_validate_json(update.payload)
            assert event.kind == "rated_game"
            d = event.detail
            assert d.deviation_before is not None and d.volatility_before is not None
            assert event.delta is not None and abs(event.delta) <= Decimal("700.00")
            assert event.state.rating >= Decimal("400.00")
            assert Decimal("45.00") <= event.state.deviation <= Decimal("500.00")
            assert Decimal("45.00") <= d.deviation_before <= Decimal("500.00")
            assert Decimal(0) < event.state.volatility <= Decimal("0.1")
            # A game never raises the deviation above the one it used.
            assert event.state.deviation <= d.deviation_before
            # The deviation it used: the stored one, grown with the time since the player's latest game.
            assert d.volatility_before == Decimal(previous.volatility) / 10**9
            grown = hundredths(d.deviation_before)
            last = latest.get(update.key)
            if last is None or at <= last:
                assert grown == min(max(previous.deviation, 4500), 50000)
            else:
                assert grown >= min(previous.deviation, 50000)
            # last_rated_at: the game's string if it is not earlier than the stored one.
            if last is None or at >= last:
                assert update.state.last_rated_at == item["finished_at"]
                latest[update.key] = at
            else:
                assert update.state.last_rated_at == previous.last_rated_at
            assert update.state.rated_games == previous.rated_games + 1
