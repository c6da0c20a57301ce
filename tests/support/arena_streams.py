"""Streams of `arena` games for its property tests (tests/unit/engine/test_engine_properties.py)
and the contract suite (tests/unit/contract/, beside the traffic generator's streams): seeding
rows near the floor as often as not, then up to 60 games of six players, of every category and
of controls the arena does not rate, rated or (now and then) not, of every termination."""

import json
from typing import Any

from hypothesis import strategies as st

from schemas.game_finished import GameFinished
from tests.support.period_streams import Item, Stream
from worker.rules.categories import Category
from worker.rules.interface import SeedRow

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
def game_values(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 60))):
        white, black = draw(st.lists(st.sampled_from(PLAYERS), min_size=2, max_size=2, unique=True))
        base, increment = draw(st.sampled_from(CONTROLS))
        out.append(
            {
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
        )
    return out


def parse(value: dict[str, Any]) -> GameFinished:
    return GameFinished.model_validate_json(json.dumps(value))


@st.composite
def streams(draw: st.DrawFn, imports: bool = True) -> Stream:
    """Seeding rows, then games (`imports` is the suite's: the arena's streams make none)."""
    rows = draw(seeds)
    items: list[Item] = list(draw(game_values()))
    return Stream(rows, items)
