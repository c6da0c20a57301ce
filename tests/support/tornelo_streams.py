"""The streams of `tornelo` (Tornelo's default Elo, one change per tournament) that hypothesis
draws, for its own properties (tests/unit/engine/test_tornelo_stream_properties.py), for the
contract suite (tests/unit/contract/) and for the partial closes over the store in memory
(tests/unit/replay/test_partial_closes.py), and their replay through the engine harness.

The streams: 5-8 players, games of every category and some unrated controls, rated or not,
forfeits and aborted games, of several tournaments that overlap, of no tournament
(`tournament_id` absent or null), and late (their tournament ended); close lines ending the
tournaments, some twice, some that never had a game; seeding rows first (established,
provisional and initial ratings, with K modifiers) and now and then an import, forced or not,
between games.
"""

import json
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from schemas.rating_changed_periods import TorneloRatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2
from schemas.tornelo_game import TorneloGameFinished
from tests.support import period_streams
from tests.support.period_streams import Close, Import, Item, Replayer, Stream
from worker.engine.engine import Engine, Update
from worker.rules.hundredths import Points
from worker.rules.interface import SeedRow
from worker.systems.registry import TORNELO
from worker.systems.tornelo.rules import TorneloState, parse_seed_row

PLAYERS = [f"p{i}" for i in range(8)]
CATEGORIES = ["rapid", "blitz", "bullet"]
KEYS = [f"{p}/{c}" for p in PLAYERS for c in CATEGORIES]
# The arena's controls of each category (docs/systems/arena.md, "Rules and readings"), blitz the most
# often so that players meet each other often in one category; and some it does not rate.
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
# Tournament ids, in the order the stream runs them (`.`, `-` and `_` sort before letters and
# digits in the byte order of keys only where they meet `/`: the ids differ in their own bytes).
TOURNAMENTS = ["T1", "T2", "T-3", "t4", "T_5", "T1.6"]
NO_GAMES = "T9"  # a tournament that ends without any game
NONE = "none"  # a game of no tournament, `tournament_id` null
ABSENT = "absent"  # a game of no tournament, `tournament_id` left out

# The strategies every draw uses, made once (a strategy made anew at each draw is validated anew).
PAIRS = {n: st.sampled_from([(w, b) for w in PLAYERS[:n] for b in PLAYERS[:n] if w != b]) for n in range(2, 9)}
ANY_CONTROL = st.sampled_from(CONTROLS)
COUNTED_CONTROL = st.sampled_from(list(RATED))
RESULT = st.sampled_from(RESULTS)
ANY_TERMINATION = st.sampled_from(TERMINATIONS)
PLAYED = st.sampled_from(TERMINATIONS[:3])
TENTHS = st.integers(0, 9)
BOOLEAN = st.booleans()
DAY = st.integers(1, 28)
ANY_TOURNAMENT = st.sampled_from([*TOURNAMENTS, NONE, ABSENT])
CLOSED = st.sampled_from([*TOURNAMENTS, NO_GAMES])


@st.composite
def game_value(draw: st.DrawFn, i: int, players: int, tournament: str, counted: bool = False) -> dict[str, Any]:
    """A game's message between two of the first `players`, of `tournament` (or of none: NONE,
    ABSENT); `counted`: one the arena counts (rated, played, of a rated control)."""
    white, black = draw(PAIRS[players])
    base, increment = draw(COUNTED_CONTROL if counted else ANY_CONTROL)
    value = {
        "event_id": f"e{i}",
        "game_id": f"g{i}",
        "finished_at": f"2026-11-{draw(DAY):02d}T12:00:00Z",  # no rule of tornelo reads it
        "rated": counted or draw(TENTHS) > 0,
        "time_control": {"base_seconds": base, "increment_seconds": increment},
        "white_id": white,
        "black_id": black,
        "result": draw(RESULT),
        "termination": draw(PLAYED if counted else ANY_TERMINATION),
    }
    if tournament != ABSENT:
        value["tournament_id"] = None if tournament == NONE else tournament
    return value


SEED_GAMES = st.one_of(st.integers(0, 40), st.integers(18, 21), st.just(0))
PROVISIONAL_RATING = st.one_of(st.integers(100, 2700), st.sampled_from([100, 2200, 2201, 2700]))
ESTABLISHED_RATING = st.one_of(st.integers(100, 3000), st.sampled_from([100, 101, 2200, 2201]))
K_MODIFIER = st.sampled_from(["", "", "", "1", "1.00", "0.5", "1.50", "0.01", "10", "10.00", "2.25", "0.75"])
CATEGORY = st.sampled_from(["blitz", "blitz", "blitz", "rapid", "bullet"])  # as the games
PLAYER = {n: st.sampled_from(PLAYERS[:n]) for n in range(2, 9)}


@st.composite
def seed_row(draw: st.DrawFn, players: int) -> SeedRow:
    """A valid row of tornelo's syntax (docs/systems/tornelo.md, "Seeding rows") for one of the first
    `players`, parsed as the seeding file parses it: initial (0 games), provisional (under 20) and
    established ratings, next to the edges of 20 games and of K's 2200, with K modifiers."""
    games = draw(SEED_GAMES)
    rating = draw(PROVISIONAL_RATING if games < 20 else ESTABLISHED_RATING)
    fields = [draw(PLAYER[players]), draw(CATEGORY), str(rating), str(games), draw(K_MODIFIER)]
    return parse_seed_row(fields)


ROLL = st.integers(0, 19)
PLAYER_COUNT = st.integers(5, 8)
AGAIN = st.one_of(st.none(), st.integers(0, len(KEYS) - 1))


@st.composite
def streams(draw: st.DrawFn, imports: bool = True, most: int = 40) -> Stream:
    """Seeding rows, then games and close lines. The stream runs the tournaments in turn, two at a
    time (the current one and the next overlap): most games are of one of them, some of no
    tournament, some of any (late, once ended); most close lines end the current tournament, the
    others any (again, or one that never had a game)."""
    players = draw(PLAYER_COUNT)
    seeds = draw(st.lists(seed_row(players), min_size=2, max_size=12, unique_by=lambda r: r.key))
    now = 0  # the index in TOURNAMENTS of the stream's current tournament
    items: list[Item] = []
    for i in range(draw(st.integers(0, most))):
        roll = draw(ROLL)
        if roll < 3:
            if draw(BOOLEAN):
                items.append(Close(TOURNAMENTS[now]))
                now = min(now + 1, len(TOURNAMENTS) - 1)
            else:
                items.append(Close(draw(CLOSED)))
        elif roll == 3 and imports:
            items.append(Import(draw(seed_row(players)), draw(BOOLEAN), draw(AGAIN)))
        else:
            which = draw(TENTHS)  # mostly the current tournament or the next, else any (or none)
            running = TOURNAMENTS[min(now + which % 2, len(TOURNAMENTS) - 1)]
            items.append(draw(game_value(i, players, running if which < 7 else draw(ANY_TOURNAMENT))))
    return Stream(seeds, items)


def parse(value: dict[str, Any]) -> TorneloGameFinished:
    return TorneloGameFinished.model_validate_json(json.dumps(value))


TRAINING = 1200  # RATING_TRAINING_RATING: the display of an unrated player


def new_engine() -> Engine[TorneloState]:
    return Engine(TORNELO, Points(TRAINING))


SYSTEM = Replayer(new_engine, parse)
new_store, seeded, step, replay = SYSTEM.new_store, SYSTEM.seeded, SYSTEM.step, SYSTEM.replay
Updates = list[Update[TorneloState]]


def event(payload: bytes) -> TorneloRatingChanged:
    """The event, validated by the contract's one v2 schema (`system` selects tornelo's shape)."""
    parsed = RATING_CHANGED_V2.validate_json(payload)
    assert isinstance(parsed, TorneloRatingChanged)
    return parsed


def display(rating: Decimal | None) -> int:
    return TRAINING if rating is None else int(rating)


def takes_for(stream: Stream) -> st.SearchStrategy[list[frozenset[str]]]:
    """For each close line, the ratings the service's close takes at once."""
    return period_streams.takes_for(stream, KEYS)


def tournament_of(value: dict[str, Any]) -> str | None:
    tournament = value.get("tournament_id")
    assert tournament is None or isinstance(tournament, str)
    return tournament


def redeliveries(value: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The same game again, differing at most in what is not a fact (docs/systems/tornelo.md, "Input"):
    the event id, an unknown field, the finished_at, `tournament_id` absent for null and back; and
    conflicting ones: another `tournament_id`, or none for one, or one for none."""
    same = [
        dict(value),
        {**value, "event_id": "again", "unknown": 1},
        {**value, "finished_at": "2027-06-01T00:00:00Z"},
    ]
    without = {k: v for k, v in value.items() if k != "tournament_id"}
    tournament = tournament_of(value)
    if tournament is None:
        same += [without, {**value, "tournament_id": None}]
        conflicting = [{**value, "tournament_id": "T1"}, {**value, "tournament_id": NO_GAMES}]
    else:
        other = "T2" if tournament != "T2" else "T1"
        conflicting = [{**value, "tournament_id": other}, {**value, "tournament_id": None}, without]
    return same, conflicting
