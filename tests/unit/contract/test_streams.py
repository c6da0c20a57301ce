"""The contract of a stream, for every rating system (tests/support/contract_systems.py): a
replay gives the same bytes every time, `rate` writes what the engine gives, a redelivered game
changes nothing, and each rating's events come in gapless `seq`, each `rating_before` the
rating after the event before (docs/contract.md: "Output", "Duplicates and the idempotency
record"; docs/contract-v2.md: "Every v2 event" and the per-period systems' "Order").

Each property draws, of each source of a system's streams, the examples that source asks
(`Source.examples`: 60, or as many as the system's own copy of the property ran before the suite
took it over); `rate`'s property 60 per system."""

import io
import json
from decimal import Decimal
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.contract_systems import SYSTEMS, SystemParts, each_source
from tests.support.period_streams import Stream, line, per_key
from worker.engine.engine import Verdict
from worker.replay.replay import replay as rate
from worker.rules.hundredths import Hundredths, display

EXAMPLES = settings(max_examples=60, deadline=None)
every_system = pytest.mark.parametrize("system", SYSTEMS, ids=str)


@every_system
def test_replaying_a_stream_twice_gives_identical_bytes_and_states(system: SystemParts[Any]) -> None:
    def check(stream: Stream, data: st.DataObject) -> None:
        first, store = system.replayer.replay(stream)
        second, again = system.replayer.replay(stream)
        assert [u.payload for u in first] == [u.payload for u in second]
        assert store.states == again.states
        assert store.calendar == again.calendar

    each_source(system, True, check)


@every_system
@EXAMPLES
@given(st.data())
async def test_rate_writes_the_events_of_the_engine_the_same_every_time(
    system: SystemParts[Any], data: st.DataObject
) -> None:
    """`rating-worker rate` on the stream as a file (its close lines included) writes, byte for
    byte, what the engine gives with every close line closed whole, and the same again."""
    stream = data.draw(system.streams(False))
    expected, _ = system.replayer.replay(stream)
    for _ in range(2):
        out, dlq = io.BytesIO(), io.StringIO()
        games = io.BytesIO(b"".join(line(item) + b"\n" for item in stream.items))
        counts, _ = await rate(system.new_engine(), stream.seeds, games, out, dlq, 1_000_000)
        assert out.getvalue() == b"".join(u.payload + b"\n" for u in expected)
        assert dlq.getvalue() == ""
        assert counts.close_lines == stream.closes


@every_system
def test_a_redelivered_game_changes_nothing_and_publishes_nothing(system: SystemParts[Any]) -> None:
    """The same game again (as it was, or differing only in what is not one of its facts) is a
    duplicate; with other facts, a conflict: either way no event and no state changes, and the
    stream's output is the same with the copies in it as without."""
    each_source(system, True, partial(redelivered, system))


def redelivered(system: SystemParts[Any], stream: Stream, data: st.DataObject) -> None:
    games = [i for i, item in enumerate(stream.items) if isinstance(item, dict)]
    if not games:
        return
    original, store = system.replayer.replay(stream)
    states, records, calendar = dict(store.states), dict(store.games), store.calendar
    index = data.draw(st.sampled_from(games))
    value = stream.items[index]
    assert isinstance(value, dict)
    same, conflicting = system.redeliveries(value)
    copies = [(data.draw(st.sampled_from(same)), Verdict.DUPLICATE)]
    if conflicting:
        copies.append((data.draw(st.sampled_from(conflicting)), Verdict.CONFLICT))
    for again, verdict in copies:
        outcome = store.apply(system.parse(again))
        assert outcome.verdict is verdict
        assert outcome.updates == ()
        assert (store.states, store.games, store.calendar) == (states, records, calendar)
    # And inside the stream, anywhere after the original: the same output as without them.
    at = data.draw(st.integers(index + 1, len(stream.items)))
    items = [*stream.items[:at], *(again for again, _ in copies), *stream.items[at:]]
    with_copies, _ = system.replayer.replay(Stream(stream.seeds, items))
    assert [u.payload for u in with_copies] == [u.payload for u in original]


def hundredths(rating: Decimal | None) -> Hundredths | None:
    return None if rating is None else Hundredths(int(rating * 100))


@every_system
def test_each_rating_changes_in_gapless_seq_from_its_previous_rating(system: SystemParts[Any]) -> None:
    """Read from the published bytes, every close whole or a close taking some ratings at once:
    each rating's `seq` runs 1, 2, 3... with its state's; `rating_before` is the rating of the
    state before (a rating never seen: the system's own, null but for glicko2's 1500.00), null
    for an import over no state; `rating_after` the state's rating; the displays those of the
    states before and after (the rating rounded, or the training rating while unrated)."""
    each_source(system, True, partial(gapless, system))


def gapless(system: SystemParts[Any], stream: Stream, data: st.DataObject) -> None:
    training = system.new_engine().training_rating

    def shown(rating: Hundredths | None) -> int:
        return training if rating is None else display(rating)

    for takes in (None, data.draw(system.takes(stream))):
        updates, store = system.replayer.replay(stream, takes)
        previous: dict[str, Any] = {}  # each rating's state after its latest event
        for update in updates:
            e = json.loads(update.payload, parse_float=Decimal)
            before = previous.get(update.key, system.rules.unseen)
            assert e["seq"] == update.state.seq == before.seq + 1
            imported_over_nothing = e["kind"] == "imported" and before.seq == 0
            assert hundredths(e["rating_before"]) == (None if imported_over_nothing else before.rating)
            assert hundredths(e["rating_after"]) == update.state.rating
            assert (e["display_before"], e["display_after"]) == (shown(before.rating), shown(update.state.rating))
            previous[update.key] = update.state
        assert previous == store.states


@pytest.mark.parametrize("system", [s for s in SYSTEMS if s.periodic], ids=str)
def test_a_close_that_takes_some_ratings_at_once_gives_each_rating_the_events_of_a_whole_close(
    system: SystemParts[Any],
) -> None:
    """A per-period system (docs/contract-v2.md, "The per-period systems", "Order"): the ratings
    a close leaves are closed by their next game (its close events first), or when the close is
    finished; per rating, the same events as `rate`'s close lines."""

    def check(stream: Stream, data: st.DataObject) -> None:
        whole, store = system.replayer.replay(stream)
        partly, other = system.replayer.replay(stream, data.draw(system.takes(stream)))
        assert per_key(partly) == per_key(whole)
        assert other.states == store.states

    each_source(system, True, check)
