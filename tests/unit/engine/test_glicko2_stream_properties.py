"""Invariants of `glicko2` (Glicko-2 game by game) through the one engine, for any stream of games and
seeding rows (hypothesis), checked on the engine's output and on the states it keeps
(docs/systems/glicko2.md, "Rules and readings", "State and events, with an example" and "Seeding rows";
docs/contract-v2.md, "Every v2 event"): games of every category and some unrated controls, rated or not,
forfeits and aborted games, finished over two years in any order (equal instants written differently
included)."""

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.rating_changed_v2 import Glicko2RatingChanged
from schemas.system_game import SystemGameFinished
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, SeedVerdict, Verdict
from worker.engine.events_v2 import read_glicko2
from worker.rules.glicko2 import GlickoRules, GlickoState, parse_seed_row
from worker.rules.hundredths import Hundredths, Points
from worker.rules.system import SeedRow
from worker.store.state_codec import GLICKO2_STATES

PLAYERS = [f"p{i}" for i in range(6)]
CATEGORIES = ["rapid", "blitz", "bullet"]
# The arena's controls of each category (docs/systems/arena.md, "Rules and readings"), and some it does not rate.
RATED = {
    (900, 0): "rapid",
    (600, 10): "rapid",
    (2700, 10): "rapid",
    (180, 0): "blitz",
    (300, 3): "blitz",
    (600, 0): "blitz",
    (60, 0): "bullet",
    (120, 0): "bullet",
    (60, 2): "bullet",
}
UNRATED = [(240, 0), (30, 0), (86400, 0), (180, 1)]
CONTROLS = [*RATED, *UNRATED]
TERMINATIONS = ["checkmate", "resignation", "timeout", "stalemate", "draw_agreement", "forfeit", "aborted"]
START = datetime(2025, 1, 1, tzinfo=UTC)
SPAN = 2 * 365 * 86400  # two years of seconds
OFFSETS = [0, 0, 60, -330, 14 * 60, -12 * 60]  # minutes: Z, +01:00, -05:30, +14:00, -12:00
TWO_DECIMALS = Decimal("0.01")


def stamp(seconds: int, fraction: str, minutes: int, zulu: bool) -> str:
    """A finished_at of the instant START + seconds + 0.fraction, written at the offset."""
    local = (START + timedelta(seconds=seconds)).astimezone(timezone(timedelta(minutes=minutes)))
    digits = f".{fraction}" if fraction else ""
    if minutes == 0 and zulu:
        zone = "Z"
    else:
        zone = f"{'+' if minutes >= 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return f"{local:%Y-%m-%dT%H:%M:%S}{digits}{zone}"


# The exact instant of every finished_at made here (seconds since START), computed as it was made.
INSTANTS: dict[str, Fraction] = {}


@st.composite
def finished_at(draw: st.DrawFn, pool: list[int]) -> str:
    # Often an instant already used (equal instants, written the same or differently).
    reuse = bool(pool) and draw(st.booleans())
    seconds = draw(st.sampled_from(pool)) if reuse else draw(st.integers(0, SPAN))
    pool.append(seconds)
    fraction = draw(st.sampled_from(["", "", "", "5", "25", "000", "123456789", "1"]))
    text = stamp(seconds, fraction, draw(st.sampled_from(OFFSETS)), draw(st.booleans()))
    INSTANTS[text] = seconds + (Fraction(int(fraction), 10 ** len(fraction)) if fraction else Fraction(0))
    return text


@st.composite
def game_value(draw: st.DrawFn, i: int, pool: list[int]) -> dict[str, Any]:
    white, black = draw(st.lists(st.sampled_from(PLAYERS), min_size=2, max_size=2, unique=True))
    base, increment = draw(st.sampled_from(CONTROLS))
    return {
        "event_id": f"e{i}",
        "game_id": f"g{i}",
        "finished_at": draw(finished_at(pool)),
        "rated": draw(st.integers(0, 9)) > 0,
        "time_control": {"base_seconds": base, "increment_seconds": increment},
        "white_id": white,
        "black_id": black,
        "result": draw(st.sampled_from(["1-0", "0-1", "1/2-1/2"])),
        "termination": draw(st.sampled_from(TERMINATIONS)),
    }


def fixed2(hundredths: int, whole: bool) -> str:
    return str(hundredths // 100) if whole and hundredths % 100 == 0 else f"{hundredths // 100}.{hundredths % 100:02d}"


@st.composite
def seed_row(draw: st.DrawFn) -> SeedRow:
    """A valid row of glicko2's syntax (docs/systems/glicko2.md, "Seeding rows"), parsed as the seeding file
    parses it."""
    rating = draw(st.one_of(st.integers(40000, 300000), st.integers(40000, 41000)))
    games = draw(st.one_of(st.just(0), st.integers(0, 300)))
    given_ = games > 0 or draw(st.booleans())
    deviation = fixed2(draw(st.integers(4500, 50000)), draw(st.booleans())) if given_ else ""
    nanos = draw(st.one_of(st.integers(1, 100_000_000), st.sampled_from([100_000_000, 60_000_000, 90_000_000])))
    volatility = f"0.{nanos:09d}".rstrip("0") if nanos < 100_000_000 else "0.1"
    fields = [
        draw(st.sampled_from(PLAYERS)),
        draw(st.sampled_from(CATEGORIES)),
        fixed2(rating, draw(st.booleans())),
        str(games),
        deviation,
        volatility if given_ else "",
    ]
    return parse_seed_row(fields)


Item = tuple[SeedRow, bool] | dict[str, Any]  # a seeding row (forced or not), or a game's message


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[SeedRow], list[Item]]:
    """Seeding rows first (as `rate --seed`: one per rating), then games with some rows (an
    import, forced or not) among them."""
    seeds = draw(st.lists(seed_row(), max_size=6, unique_by=lambda r: r.key))
    pool: list[int] = []
    items: list[Item] = []
    for i in range(draw(st.integers(0, 50))):
        if draw(st.integers(0, 14)) == 0:
            items.append((draw(seed_row()), draw(st.booleans())))
        else:
            items.append(draw(game_value(i, pool)))
    return seeds, items


def parse(value: dict[str, Any]) -> SystemGameFinished:
    return SystemGameFinished.model_validate_json(json.dumps(value))


def new_store() -> Ratings[GlickoState]:
    return Ratings(Engine(GlickoRules(), Points(1200)))


def replay(seeds: Iterable[SeedRow], items: Iterable[Item]) -> tuple[list[bytes], Ratings[GlickoState]]:
    store = new_store()
    payloads = []
    for row in seeds:
        update = store.seed(row).update
        assert update is not None  # a rating never seen is always seeded
        payloads.append(update.payload)
    for item in items:
        if isinstance(item, dict):
            payloads.extend(u.payload for u in store.apply(parse(item)).updates)
        else:
            seeded = store.seed(*item)
            if seeded.update is not None:
                payloads.append(seeded.update.payload)
    return payloads, store


def hundredths(value: Decimal) -> Hundredths:
    assert value == value.quantize(TWO_DECIMALS)
    return Hundredths(int(value * 100))


@settings(max_examples=150, deadline=None)
@given(streams())
def test_replaying_a_stream_twice_gives_identical_bytes(stream: tuple[list[SeedRow], list[Item]]) -> None:
    seeds, items = stream
    first, store = replay(seeds, items)
    second, again = replay(seeds, items)
    assert first == second
    assert store.states == again.states


def redeliveries(value: dict[str, Any]) -> list[dict[str, Any]]:
    """The same game again, differing at most in what is not a fact (v1's facts only: glicko2 has
    none of its own): the event id, an unknown field, the finished_at."""
    return [
        dict(value),
        {**value, "event_id": "again", "unknown": 1},
        {**value, "finished_at": "2027-06-01T00:00:00Z"},
    ]


@settings(max_examples=150, deadline=None)
@given(streams(), st.data())
def test_a_duplicate_changes_nothing_and_publishes_nothing(
    stream: tuple[list[SeedRow], list[Item]], data: st.DataObject
) -> None:
    seeds, items = stream
    games = [i for i, item in enumerate(items) if isinstance(item, dict)]
    if not games:
        return
    original, store = replay(seeds, items)
    states, records = dict(store.states), dict(store.games)
    index = data.draw(st.sampled_from(games))
    value = items[index]
    assert isinstance(value, dict)
    again = data.draw(st.sampled_from(redeliveries(value)))
    outcome = store.apply(parse(again))
    assert outcome.verdict is Verdict.DUPLICATE
    assert outcome.updates == ()
    assert store.states == states
    assert store.games == records
    # And inside the stream, anywhere after the original: the same output as without it.
    at = data.draw(st.integers(index + 1, len(items)))
    with_redelivery, _ = replay(seeds, [*items[:at], again, *items[at:]])
    assert with_redelivery == original


@settings(max_examples=150, deadline=None)
@given(streams())
def test_each_rating_changes_in_gapless_seq_from_its_previous_rating(stream: tuple[list[SeedRow], list[Item]]) -> None:
    seeds, items = stream
    payloads, store = replay(seeds, items)
    previous: dict[str, Glicko2RatingChanged] = {}
    for payload in payloads:
        event = Glicko2RatingChanged.model_validate_json(payload)  # valid, nulls by kind included
        key = f"{event.player_id}/{event.category}"
        last = previous.get(key)
        assert event.seq == event.state.seq == (1 if last is None else last.seq + 1)
        if last is not None:
            assert event.rating_before == last.rating_after
        elif event.kind == "rated_game":
            assert event.rating_before == Decimal("1500.00")  # a player new to the category
        else:
            assert event.rating_before is None  # a first import: no rating before
        assert event.rating_after == event.state.rating
        previous[key] = event
    assert {k: e.seq for k, e in previous.items()} == {k: s.seq for k, s in store.states.items()}
    for key, state in store.states.items():
        s = previous[key].state
        assert (state.rating, state.deviation, state.rated_games) == (
            hundredths(s.rating),
            hundredths(s.deviation),
            s.rated_games,
        )
        assert (state.volatility, state.last_rated_at) == (int(s.volatility * 10**9), s.last_rated_at)


@settings(max_examples=150, deadline=None)
@given(streams())
def test_each_events_state_is_what_a_restore_would_store(stream: tuple[list[SeedRow], list[Item]]) -> None:
    seeds, items = stream
    store = new_store()

    def check(key: str, payload: bytes) -> None:
        published = read_glicko2(payload)
        assert published.key == key
        assert published.state == store.states[key]
        assert GLICKO2_STATES.decode(GLICKO2_STATES.encode(store.states[key])) == store.states[key]

    for row in seeds:
        update = store.seed(row).update
        assert update is not None
        check(update.key, update.payload)
    for item in items:
        if isinstance(item, dict):
            # A game changes each of its two distinct ratings once: the states right after each
            # event are the states after the game.
            for update in store.apply(parse(item)).updates:
                check(update.key, update.payload)
        else:
            seeded = store.seed(*item).update
            if seeded is not None:
                check(seeded.key, seeded.payload)


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
def test_the_bounds_the_games_counted_and_the_time_they_read(stream: tuple[list[SeedRow], list[Item]]) -> None:
    seeds, items = stream
    store = new_store()
    latest: dict[str, Fraction] = {}  # per rating, the instant of its last_rated_at
    for row in seeds:
        store.seed(row)
    for item in items:
        if not isinstance(item, dict):
            if store.seed(*item).verdict is SeedVerdict.IMPORTED:
                latest.pop(item[0].key, None)  # a seeded rating has no last_rated_at
            continue
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
