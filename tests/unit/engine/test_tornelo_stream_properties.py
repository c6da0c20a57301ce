"""Invariants of `tornelo` (Tornelo's default Elo, one change per tournament) through the one engine,
for any stream of games, close lines and seeding rows (hypothesis), checked on the engine's output
and on the states it keeps (docs/systems/tornelo.md, "Rules and readings", "State and events, with an
example" and "Seeding rows", and its worked example 20, the invariants; docs/contract-v2.md, "Every v2
event" and "The per-period systems: `fide` and `tornelo`": the order of the events).

These are `tornelo`'s own properties (its periods: where a game is recorded, closes made once,
a tournament's close independent of the order of its games, imports between games). What holds for every
system (a replay twice gives the same bytes, a redelivery changes nothing, `seq` gapless, events
valid and read back as `restore` reads them, the state's Redis encoding, `rate` equal to the
engine, a close taking some ratings at once) is the contract suite's (tests/unit/contract/),
over the same streams (tests/support/tornelo_streams.py).
"""

import random
import re
from collections import defaultdict
from typing import Any, cast

from hypothesis import example, given, settings
from hypothesis import strategies as st

from schemas.tornelo_game import TorneloGameFinished
from tests.support.period_streams import Close, Import, Item, Stream, close_of
from tests.support.tornelo_streams import (
    BOOLEAN,
    NONE,
    PLAYER_COUNT,
    PLAYERS,
    RATED,
    RESULTS,
    Updates,
    event,
    game_value,
    new_store,
    parse,
    replay,
    seed_row,
    seeded,
    step,
    streams,
    takes_for,
    tournament_of,
)
from worker.engine.engine import SeedVerdict, Update
from worker.rules.hundredths import Hundredths
from worker.rules.interface import SeedRow
from worker.systems.tornelo.codec import TORNELO_STATES
from worker.systems.tornelo.rules import TorneloState, parse_seed_row


@settings(max_examples=60, deadline=None)
@given(streams())
def test_ending_a_tournament_again_right_after_publishes_nothing_and_changes_no_state(stream: Stream) -> None:
    _, store = seeded(stream)
    ended: list[str] = []
    for item in stream.items:
        step(store, item)
        if not isinstance(item, Close):
            continue
        ended.append(item.period)
        states, calendar = dict(store.states), store.calendar
        assert store.close(item.period) == []
        # Nor does ending any tournament ended before (docs/systems/tornelo.md, "Input": ending it again does nothing).
        assert [store.close(t) for t in ended] == [[] for _ in ended]
        assert store.states == states
        assert store.calendar == calendar


def counted_category(value: dict[str, Any]) -> str | None:
    """The category of a game the arena counts (rated, neither forfeited nor aborted, of a control
    of its list: section 3), or None."""
    if not value["rated"] or value["termination"] in ("forfeit", "aborted"):
        return None
    return RATED.get((value["time_control"]["base_seconds"], value["time_control"]["increment_seconds"]))


class Closes:
    """What the events say of the tournaments, checked as they come: a game of an open tournament
    is recorded in it, a game of none or of an ended one is rated at once, its `detail.tournament_id`
    its own; a rating is closed for a tournament only once it ended, only if it has games of it, and
    once (docs/systems/tornelo.md, "Rules and readings"); every state's `pending` has one entry for
    each tournament of its games not closed yet, in the order of their first game
    (docs/systems/tornelo.md, "State and events, with an example")."""

    def __init__(self) -> None:
        # Per rating, the tournaments of its games not closed yet, in the order of their first game.
        self.recorded: dict[str, list[str]] = defaultdict(list)
        self.ended: set[str] = set()

    def check(self, update: Update[TorneloState], item: Item) -> None:
        e = event(update.payload)
        tournament = close_of(e.event_id)
        if tournament is not None:
            assert tournament in self.ended  # only an ended tournament closes
            assert tournament in self.recorded[update.key]  # the rating had games of it; not closed yet
            self.recorded[update.key].remove(tournament)
            assert e.detail.tournament_id == tournament
        elif not isinstance(item, dict):
            assert e.kind == "imported"
        else:
            own = tournament_of(item)
            assert e.event_id == f"{item['game_id']}/{e.player_id}"
            assert e.detail.tournament_id == own
            if own is None or own in self.ended:
                assert e.kind in ("period_rating", "provisional_rating")  # a one-game event
            else:
                assert e.kind == "period_game"
                if own not in self.recorded[update.key]:
                    self.recorded[update.key].append(own)
        assert [entry.tournament_id for entry in e.state.pending] == self.recorded[update.key]

    def check_game(self, value: dict[str, Any], made: Updates, before: dict[str, TorneloState]) -> None:
        """A game (its first delivery) the arena does not count publishes nothing (section 3); a
        counted one first closes its players for the ended tournaments they hold (white's, then
        black's), then publishes white's event, then black's: both `period_game` in an open
        tournament (section 5); rated at once, an event for each player the game changes, none
        for a rated player against an unrated opponent (7.4), on the states after the closes."""
        category = counted_category(value)
        if category is None:
            assert made == []
            return
        white, black = f"{value['white_id']}/{category}", f"{value['black_id']}/{category}"
        closes = [u for u in made if close_of(u.event.event_id) is not None]
        games = [u.key for u in made if close_of(u.event.event_id) is None]
        assert [u.key for u in made] == [*(u.key for u in closes), *games]
        assert [u.key for u in closes] == sorted((u.key for u in closes), key=lambda key: key != white)
        states = {**before, **{u.key: u.state for u in closes}}
        rated = {key: states.get(key, TorneloState()).rating is not None for key in (white, black)}
        own = tournament_of(value)
        if own is not None and own not in self.ended:
            assert games == [white, black]
        else:
            other = {white: black, black: white}
            assert games == [key for key in (white, black) if not (rated[key] and not rated[other[key]])]

    def none_left(self) -> bool:
        """No rating holds games of an ended tournament."""
        return not any(t in self.ended for ts in self.recorded.values() for t in ts)


@settings(max_examples=60, deadline=None)
@given(streams(), st.data())
def test_each_rating_with_games_of_an_ended_tournament_is_closed_for_it_exactly_once(
    stream: Stream, data: st.DataObject
) -> None:
    """One close event for every rating with recorded games of an ended tournament, none for another,
    its entry gone from `pending`; a close line publishes its events in the byte order of their keys
    (docs/contract-v2.md, "The per-period systems: `fide` and `tornelo`"). The same with a close that
    takes some ratings at once, the others closed by their next game or at the end."""
    for takes in (None, data.draw(takes_for(stream))):
        _, store = seeded(stream)
        closes = Closes()
        count = 0
        for item in stream.items:
            take = None
            if isinstance(item, Close):
                closes.ended.add(item.period)
                if takes is not None:
                    take, count = takes[count].__contains__, count + 1
            before = dict(store.states)
            made = step(store, item, take)
            for update in made:
                closes.check(update, item)
            if isinstance(item, dict):
                closes.check_game(item, made, before)
            if isinstance(item, Close) and takes is None:
                assert closes.none_left(), closes.recorded
                assert [u.key.encode() for u in made] == sorted(u.key.encode() for u in made)
        for update in store.finish():  # the close left in progress, finished
            closes.check(update, Close(""))
        assert closes.none_left(), closes.recorded


def tournament_games(draw: st.DrawFn, players: int, tournament: str, first: int, most: int) -> list[dict[str, Any]]:
    count = draw(st.integers(1, most))
    return [draw(game_value(first + i, players, tournament, counted=draw(BOOLEAN))) for i in range(count)]


@st.composite
def a_tournament_after_history(draw: st.DrawFn) -> tuple[Stream, list[dict[str, Any]], list[dict[str, Any]]]:
    """Seeding rows and a history (T1 ended or not, T2 left open, games of no tournament), then
    the games of T3 in two orders."""
    players = draw(PLAYER_COUNT)
    seeds = draw(st.lists(seed_row(players), min_size=2, max_size=12, unique_by=lambda r: r.key))
    history: list[Item] = [*tournament_games(draw, players, "T1", 0, 12)]
    history += tournament_games(draw, players, NONE, 100, 6)
    if draw(BOOLEAN):
        history.append(Close("T1"))
    history += tournament_games(draw, players, "T2", 200, 8)
    games = tournament_games(draw, players, "T3", 300, 25)
    return Stream(seeds, history), games, draw(st.permutations(games))


def close_events(updates: Updates, tournament: str) -> list[bytes]:
    return [u.payload for u in updates if close_of(u.event.event_id) == tournament]


@settings(max_examples=60, deadline=None)
@given(a_tournament_after_history())
def test_permuting_a_tournaments_games_changes_no_close_event(
    case: tuple[Stream, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """Example 20: T3's close is the same byte for byte whatever the order of its games (no other
    tournament of their players ending meanwhile)."""
    history, games, permuted = case
    first, _ = replay(Stream(history.seeds, [*history.items, *games, Close("T3")]))
    second, _ = replay(Stream(history.seeds, [*history.items, *permuted, Close("T3")]))
    assert close_events(second, "T3") == close_events(first, "T3")


DIGITS = re.compile(r"-?[0-9]+")


def shape(encoded: bytes) -> str:
    """The encoding with every number written as `#`."""
    return DIGITS.sub("#", encoded.decode())


def tournament_t_games(rng: random.Random, n: int) -> list[TorneloGameFinished]:
    """n blitz games of tournament T between p0 and p1-p4, colours and results at random."""
    games = []
    for i in range(n):
        opponent = rng.choice(PLAYERS[1:5])
        white, black = ("p0", opponent) if rng.random() < 0.5 else (opponent, "p0")
        value = {
            "event_id": f"e{i}",
            "game_id": f"g{i}",
            "finished_at": "2026-11-10T12:00:00Z",
            "rated": True,
            "time_control": {"base_seconds": 180, "increment_seconds": 0},
            "white_id": white,
            "black_id": black,
            "result": rng.choice(RESULTS),
            "termination": "checkmate",
            "tournament_id": "T",
        }
        games.append(parse(value))
    return games


@settings(max_examples=10, deadline=None)
@given(st.lists(seed_row(5), max_size=8, unique_by=lambda r: r.key), st.integers(0, 2**32))
def test_a_state_does_not_grow_with_the_games_of_a_tournament(seeds: list[SeedRow], games_seed: int) -> None:
    """p0's blitz state and the event of his last game, after that game alone and after 1,000
    games of tournament T, differ only in the digits of the totals (docs/systems/tornelo.md, "State and
    events, with an example")."""
    games = tournament_t_games(random.Random(games_seed), 1000)  # hypothesis's own draws would be thousands
    encoded: list[tuple[bytes, bytes]] = []
    for played in (games[-1:], games):
        store = new_store()
        for row in seeds:
            store.seed(row)
        updates = [u for game in played for u in store.apply(game).updates if u.key == "p0/blitz"]
        state = store.state("p0/blitz")
        assert [e.tournament_id for e in state.pending] == ["T"]
        encoded.append((TORNELO_STATES.encode(state), updates[-1].payload))
    (state_1, event_1), (state_1000, event_1000) = encoded
    assert shape(state_1000) == shape(state_1)
    assert shape(event_1000) == shape(event_1)
    # 1,000 games take at most 3 more digits in the seq, games and performance_games, 5 in points,
    # performance_points (hundredths) and expected (millionths, from 6 digits), 7 in the
    # performance sum (from a one-digit sum, a sign included), nothing else.
    assert len(state_1000) - len(state_1) <= 3 * 3 + 5 * 3 + 7


def own_row(key: str, state: TorneloState) -> SeedRow:
    """The row of a rated state's own rating, games and modifier, in the contract's syntax."""
    player, category = key.split("/")
    assert state.rating is not None
    modifier = f"{state.k_modifier // 100}.{state.k_modifier % 100:02d}"
    return parse_seed_row([player, category, str(state.rating // 100), str(state.rated_games), modifier])


# p0 1800 and p1 2000 in rapid (40 games each); p0 beats p1 in T1, a game recorded (p0's `pending`
# holds it); then p0's own row again, not forced: equal to his state in rating, rated_games and
# k_modifier, so skipped.
AGAIN_WITH_GAMES_PENDING = Stream(
    [parse_seed_row(["p0", "rapid", "1800", "40", ""]), parse_seed_row(["p1", "rapid", "2000", "40", ""])],
    [
        {
            "event_id": "e1",
            "game_id": "g1",
            "finished_at": "2026-11-10T12:00:00Z",
            "rated": True,
            "time_control": {"base_seconds": 900, "increment_seconds": 0},
            "white_id": "p0",
            "black_id": "p1",
            "result": "1-0",
            "termination": "checkmate",
            "tournament_id": "T1",
        },
        Import(parse_seed_row(["p0", "rapid", "1800", "40", ""]), force=False),
    ],
)


@settings(max_examples=60, deadline=None)
@given(streams())
@example(AGAIN_WITH_GAMES_PENDING)
def test_an_import_between_games_is_applied_skipped_or_refused_as_the_contract_says(stream: Stream) -> None:
    """docs/systems/tornelo.md, "Seeding rows", and docs/contract.md, "Seeding established ratings": a
    row over a rating never seen is imported; one equal to the rating's state in rating, rated_games and
    k_modifier is skipped; otherwise a rating with state is refused unless forced. The imported state
    has the row's values, `performance_sum` rating x games under 20 games (else null), and keeps
    `pending`. Some imports here are of a rated rating's own values again (`Import.again`); the explicit
    example is such an import over a rating with games pending."""
    _, store = seeded(stream)
    for item in stream.items:
        if not isinstance(item, Import):
            step(store, item)
            continue
        rated = sorted(key for key, state in store.states.items() if state.rating is not None)
        row = item.row
        if item.again is not None and rated:  # a rated rating's own values again
            key = rated[item.again % len(rated)]
            row = own_row(key, store.state(key))
        current = store.state(row.key)
        outcome = store.seed(row, item.force)
        (modifier,) = cast(tuple[Hundredths], row.extra)
        if current.seq == 0:
            expected = SeedVerdict.IMPORTED
        elif (row.rating, row.rated_games, modifier) == (current.rating, current.rated_games, current.k_modifier):
            expected = SeedVerdict.UNCHANGED
        elif not item.force:
            expected = SeedVerdict.REFUSED
        else:
            expected = SeedVerdict.IMPORTED
        assert outcome.verdict is expected, (row, current)
        if outcome.update is not None:
            assert row.rating is not None
            total = row.rating // 100 * row.rated_games if row.rated_games < 20 else None
            assert outcome.update.state == TorneloState(
                row.rating, row.rated_games, current.seq + 1, modifier, total, current.pending
            )
