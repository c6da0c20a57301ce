"""Streams of `glicko2` games for its property tests (tests/unit/engine/test_glicko2_stream_properties.py)
and the contract suite (tests/unit/contract/, beside the traffic generator's streams): seeding rows
of every form of the syntax (deviation and volatility given or not, near the rating floor), then
up to 50 games of six players, of every category and some unrated controls, rated or not,
forfeits and aborted games, finished over two years in any order (equal instants written
differently, at every offset, with fractions of seconds included), with imports, forced or not,
among them; and a game's redeliveries, differing only in what is no fact."""

import json
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from schemas.system_game import SystemGameFinished
from tests.support.period_streams import Import, Item, Stream
from worker.rules.interface import SeedRow
from worker.systems.glicko2.rules import parse_seed_row

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
    """A valid row of glicko2's seeding syntax (docs/systems/glicko2.md, "Seeding rows"), parsed as the seeding
    file parses it."""
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


@st.composite
def streams(draw: st.DrawFn, imports: bool = True) -> Stream:
    """Seeding rows first (as `rate --seed`: one per rating), then games with, if `imports`, some
    rows (an import, forced or not) among them."""
    seeds = draw(st.lists(seed_row(), max_size=6, unique_by=lambda r: r.key))
    pool: list[int] = []
    items: list[Item] = []
    for i in range(draw(st.integers(0, 50))):
        if imports and draw(st.integers(0, 14)) == 0:
            items.append(Import(draw(seed_row()), draw(st.booleans())))
        else:
            items.append(draw(game_value(i, pool)))
    return Stream(seeds, items)


def parse(value: dict[str, Any]) -> SystemGameFinished:
    return SystemGameFinished.model_validate_json(json.dumps(value))


def redeliveries(value: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The same game again, differing at most in what is not a fact (v1's facts only: glicko2 has
    none of its own): the event id, an unknown field, the finished_at; and a conflicting one:
    `rated` the other way."""
    same = [
        dict(value),
        {**value, "event_id": "again", "unknown": 1},
        {**value, "finished_at": "2027-06-01T00:00:00Z"},
    ]
    return same, [{**value, "rated": not value["rated"]}]
