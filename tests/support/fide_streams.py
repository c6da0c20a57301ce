"""The streams of `fide` (FIDE's rating, one change per calendar month in UTC) that hypothesis
draws, for its own properties (tests/unit/engine/test_fide_stream_properties.py), for the
contract suite (tests/unit/contract/) and for the partial closes over the store in memory
(tests/unit/replay/test_partial_closes.py), and their replay through the engine harness.

The streams: 5-8 players, games of every category and some unrated controls, rated or not,
forfeits and aborted games, finished over six months at various UTC offsets (often near a month's
edge, where the local date names another month); close lines of any month, in any order (months
already closed and months with no games included), so that games are held, counted at once or
late; seeding rows first and now and then an import, forced or not, between games.
"""

import json
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from schemas.rating_changed_periods import FideRatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2
from schemas.system_game import SystemGameFinished
from tests.support import period_streams
from tests.support.period_streams import Close, Import, Item, Replayer, Stream
from worker.engine.engine import Engine, Update
from worker.rules.hundredths import Points
from worker.rules.interface import SeedRow
from worker.systems.fide.rules import FideState, parse_seed_row
from worker.systems.registry import FIDE

PLAYERS = [f"p{i}" for i in range(8)]
CATEGORIES = ["rapid", "blitz", "bullet"]
KEYS = [f"{p}/{c}" for p in PLAYERS for c in CATEGORIES]
# The arena's controls of each category (docs/systems/arena.md, "Rules and readings"), blitz the most
# often so that a player meets enough rated opponents in one category for a first rating; and some it
# does not rate.
RATED = {
    (900, 0): "rapid",
    (600, 10): "rapid",
    (180, 0): "blitz",
    (300, 3): "blitz",
    (600, 0): "blitz",
    (60, 0): "bullet",
    (120, 0): "bullet",
}
UNRATED = [(240, 0), (30, 0), (86400, 0), (120, 1)]
CONTROLS = [*RATED, *[(180, 0), (300, 3), (600, 0)] * 4, *UNRATED]
TERMINATIONS = [*["checkmate", "resignation", "timeout"] * 3, "stalemate", "draw_agreement", "forfeit", "aborted"]
RESULTS = ["1-0", "0-1", "1/2-1/2"]
MONTHS = ["2026-06", "2026-07", "2026-08", "2026-09", "2026-10", "2026-11"]  # the games' months, UTC
CLOSE_MONTHS = ["2026-04", "2026-05", *MONTHS, "2026-12", "2027-01"]  # with months that have no game
OFFSETS = [0, 0, 60, -330, 345, 14 * 60, -12 * 60]  # minutes: Z, +01:00, -05:30, +05:45, +14:00, -12:00
EDGE = 20 * 3600  # seconds: an instant this near a month's edge is often in another month locally


def month_start(month: str) -> datetime:
    return datetime(int(month[:4]), int(month[5:]), 1, tzinfo=UTC)


def month_after(month: str) -> str:
    year, number = int(month[:4]), int(month[5:])
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def stamp(instant: datetime, fraction: str, minutes: int, utc: str, leap: bool = False) -> str:
    """A finished_at of `instant` (+ 0.fraction s), written at the offset (`utc`: how offset 0 is
    written); `leap`: an instant at :59 written as the leap second :60, which counts as :59."""
    local = instant.astimezone(timezone(timedelta(minutes=minutes)))
    digits = f".{fraction}" if fraction else ""
    zone = utc if minutes == 0 else f"{'+' if minutes >= 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    if leap:
        assert local.second == 59
        return f"{local:%Y-%m-%dT%H:%M}:60{digits}{zone}"
    return f"{local:%Y-%m-%dT%H:%M:%S}{digits}{zone}"


# The month in UTC of every finished_at made here, as it was made (from its instant, not its text).
MONTH_OF: dict[str, str] = {}

# The strategies every draw uses, made once (a strategy made anew at each draw is validated anew).
PAIRS = {n: st.sampled_from([(w, b) for w in PLAYERS[:n] for b in PLAYERS[:n] if w != b]) for n in range(2, 9)}
ANY_CONTROL = st.sampled_from(CONTROLS)
COUNTED_CONTROLS = {
    category: st.sampled_from([c for c, name in RATED.items() if category in (None, name)])
    for category in (None, *CATEGORIES)
}
RESULT = st.sampled_from(RESULTS)
ANY_TERMINATION = st.sampled_from(TERMINATIONS)
PLAYED = st.sampled_from(TERMINATIONS[:3])
TENTHS = st.integers(0, 9)
WHERE = st.sampled_from(["start", "end", "anywhere", "leap"])
NEAR_EDGE = st.integers(0, EDGE)
SECONDS = {
    m: st.integers(0, int((month_start(month_after(m)) - month_start(m)).total_seconds()) - 1) for m in CLOSE_MONTHS
}
FRACTION = st.sampled_from(["", "", "", "5", "123", "999999999"])
OFFSET = st.sampled_from(OFFSETS)
UTC_ZONE = st.sampled_from(["Z", "+00:00", "z", "-00:00"])
BOOLEAN = st.booleans()


@st.composite
def finished_at(draw: st.DrawFn, month: str) -> str:
    """An instant of `month` in UTC (often within EDGE of its start or end, sometimes its last
    second written as a leap second), at some offset."""
    start = month_start(month)
    last = int((month_start(month_after(month)) - start).total_seconds()) - 1
    where = draw(WHERE)
    if where == "start":
        seconds = draw(NEAR_EDGE)
    elif where == "end":
        seconds = last - draw(NEAR_EDGE)
    else:
        seconds = last if where == "leap" else draw(SECONDS[month])
    instant = start + timedelta(seconds=seconds)
    text = stamp(instant, draw(FRACTION), draw(OFFSET), draw(UTC_ZONE), where == "leap")
    MONTH_OF[text] = month
    return text


@st.composite
def game_value(
    draw: st.DrawFn, i: int, players: int, month: str, counted: bool = False, category: str | None = None
) -> dict[str, Any]:
    """A game's message between two of the first `players`; `counted`: one the arena counts (rated,
    played, of a rated control, of `category` if given)."""
    white, black = draw(PAIRS[players])
    base, increment = draw(COUNTED_CONTROLS[category] if counted else ANY_CONTROL)
    return {
        "event_id": f"e{i}",
        "game_id": f"g{i}",
        "finished_at": draw(finished_at(month)),
        "rated": counted or draw(TENTHS) > 0,
        "time_control": {"base_seconds": base, "increment_seconds": increment},
        "white_id": white,
        "black_id": black,
        "result": draw(RESULT),
        "termination": draw(PLAYED if counted else ANY_TERMINATION),
    }


SEED_RATING = st.one_of(
    st.integers(1400, 2800),
    st.integers(1400, 1460),
    st.sampled_from([1400, 2299, 2300, 2399, 2400, 2600, 2601, 2700]),
)
SEED_GAMES = st.one_of(st.integers(0, 80), st.integers(28, 31))
REACHED = {True: st.sampled_from(["true", ""]), False: st.sampled_from(["true", "false", "", ""])}
BIRTH = st.sampled_from(["", "", "", "2008", "2010", "2007", "1990"])
CATEGORY = st.sampled_from(["blitz", "blitz", "blitz", "rapid", "bullet"])  # as the games
PLAYER = {n: st.sampled_from(PLAYERS[:n]) for n in range(2, 9)}


@st.composite
def seed_row(draw: st.DrawFn, players: int) -> SeedRow:
    """A valid row of fide's syntax (docs/systems/fide.md, "Seeding rows") for one of the first
    `players`, parsed as the seeding file parses it: ratings anywhere and next to the rules' edges
    (1400, 2300, 2400, 2600), games next to 30, juniors and not."""
    rating = draw(SEED_RATING)
    fields = [draw(PLAYER[players]), draw(CATEGORY), str(rating), str(draw(SEED_GAMES))]
    return parse_seed_row([*fields, draw(REACHED[rating >= 2400]), draw(BIRTH)])


ROLL = st.integers(0, 19)
MONTH_INDEX = st.integers(0, len(MONTHS) - 1)
CLOSE_MONTH = st.sampled_from(CLOSE_MONTHS)
PLAYER_COUNT = st.integers(5, 8)
AGAIN = st.one_of(st.none(), st.integers(0, len(KEYS) - 1))


@st.composite
def streams(draw: st.DrawFn, imports: bool = True, most: int = 40) -> Stream:
    """Seeding rows, then games and close lines. The stream moves through the months: most games
    finish about its current month (some in the month before, late once that month is closed),
    and most close lines close the month before it, the others any month."""
    players = draw(PLAYER_COUNT)
    seeds = draw(st.lists(seed_row(players), min_size=4, max_size=12, unique_by=lambda r: r.key))
    now = 0  # the index in MONTHS of the stream's current month
    items: list[Item] = []
    for i in range(draw(st.integers(0, most))):
        roll = draw(ROLL)
        if roll == 0:
            now = min(now + 1, len(MONTHS) - 1)
        if roll < 3:
            before = MONTHS[now - 1] if now > 0 else "2026-05"
            items.append(Close(before if draw(BOOLEAN) else draw(CLOSE_MONTH)))
        elif roll == 3 and imports:
            items.append(Import(draw(seed_row(players)), draw(BOOLEAN), draw(AGAIN)))
        else:
            near = draw(TENTHS)
            index = now + near % 3 - 1 if near < 7 else draw(MONTH_INDEX)
            items.append(draw(game_value(i, players, MONTHS[min(max(index, 0), len(MONTHS) - 1)])))
    return Stream(seeds, items)


def parse(value: dict[str, Any]) -> SystemGameFinished:
    return SystemGameFinished.model_validate_json(json.dumps(value))


TRAINING = 1200  # RATING_TRAINING_RATING: the display of an unrated player


def new_engine() -> Engine[FideState]:
    return Engine(FIDE, Points(TRAINING))


SYSTEM = Replayer(new_engine, parse)
new_store, seeded, step, replay = SYSTEM.new_store, SYSTEM.seeded, SYSTEM.step, SYSTEM.replay
Updates = list[Update[FideState]]


def event(payload: bytes) -> FideRatingChanged:
    """The event, validated by the contract's one v2 schema (`system` selects fide's shape)."""
    parsed = RATING_CHANGED_V2.validate_json(payload)
    assert isinstance(parsed, FideRatingChanged)
    return parsed


def display(rating: Decimal | None) -> int:
    return TRAINING if rating is None else int(rating)


def takes_for(stream: Stream) -> st.SearchStrategy[list[frozenset[str]]]:
    """For each close line, the ratings the service's close takes at once."""
    return period_streams.takes_for(stream, KEYS)


def redeliveries(value: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The same game again, differing at most in what is not a fact (v1's facts only: fide has
    none of its own): the event id, an unknown field, the finished_at (even in another month); and
    a conflicting one: `rated` the other way."""
    same = [
        dict(value),
        {**value, "event_id": "again", "unknown": 1},
        {**value, "finished_at": "2027-06-01T00:00:00Z"},
        {**value, "finished_at": "2026-01-15T08:00:00+05:00"},
    ]
    return same, [{**value, "rated": not value["rated"]}]
