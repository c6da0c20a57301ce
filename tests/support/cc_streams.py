"""Streams of `uscf-cc` games for its property tests (tests/unit/engine/test_cc_stream_properties.py)
and the contract suite (tests/unit/contract/, beside the traffic generator's streams): seeding
rows anywhere (negative ratings included) or next to the K boundaries and the 24/25/26 threshold,
then up to 50 games of six players, forfeits (ordinary, special, kind absent) and aborted games
often, correspondence controls and a live one, rated or (now and then) not; and a game's
redeliveries, differing only in what is no fact."""

import json
from typing import Any

from hypothesis import strategies as st

from schemas.correspondence_game import CorrespondenceGameFinished
from tests.support.period_streams import Item, Stream
from worker.rules.hundredths import Hundredths
from worker.rules.interface import SeedRow

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


@st.composite
def streams(draw: st.DrawFn, imports: bool = True) -> Stream:
    """Seeding rows, then games (`imports` is the suite's: these streams make none)."""
    rows = draw(seeds)
    items: list[Item] = list(draw(game_values()))
    return Stream(rows, items)


def redeliveries(value: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The same game sent again, differing at most in what is no fact (docs/systems/uscf-cc.md,
    "Input"): forfeit_kind on a game that is not a forfeit; on a forfeit, an absent kind for
    "ordinary" and back; the event id and an unknown field. And a conflicting one: `rated` the
    other way."""
    same = [dict(value), {**value, "event_id": "again", "unknown": 1}]
    without = {k: v for k, v in value.items() if k != "forfeit_kind"}
    if value["termination"] != "forfeit":
        same += [without, {**value, "forfeit_kind": "ordinary"}, {**value, "forfeit_kind": "special"}]
    elif value.get("forfeit_kind", "ordinary") == "ordinary":
        same += [without, {**value, "forfeit_kind": "ordinary"}]
    return same, [{**value, "rated": not value["rated"]}]
