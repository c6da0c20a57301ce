"""Invariants of `fide` (FIDE's rating, one change per calendar month in UTC) through the one engine,
for any stream of games, close lines and seeding rows (hypothesis), checked on the engine's output
and on the states it keeps (docs/systems/fide.md, "Rules and readings", "State and events, with an
example" and "Seeding rows", and its worked example 16, the invariants; docs/contract-v2.md, "Every v2
event" and "The per-period systems: `fide` and `tornelo`": the order of the events).

These are `fide`'s own properties (its periods: where a game is recorded, closes made once,
a month's close independent of the order of its games, imports between games). What holds for every
system (a replay twice gives the same bytes, a redelivery changes nothing, `seq` gapless, events
valid and read back as `restore` reads them, the state's Redis encoding, `rate` equal to the
engine, a close taking some ratings at once) is the contract suite's (tests/unit/contract/),
over the same streams (tests/support/fide_streams.py).
"""

import random
import re
from collections import defaultdict
from typing import Any, cast

from hypothesis import example, given, settings
from hypothesis import strategies as st

from schemas.rating_changed_periods import FideRatingChanged
from schemas.system_game import SystemGameFinished
from tests.support.fide_streams import (
    BOOLEAN,
    CLOSE_MONTHS,
    MONTH_OF,
    MONTHS,
    PLAYER_COUNT,
    PLAYERS,
    RATED,
    RESULTS,
    Updates,
    event,
    game_value,
    month_after,
    new_store,
    parse,
    replay,
    seed_row,
    seeded,
    step,
    streams,
    takes_for,
)
from tests.support.period_streams import Close, Import, Item, Stream, close_of
from worker.engine.engine import SeedVerdict, Update
from worker.rules.interface import SeedRow
from worker.systems.fide.codec import FIDE_STATES
from worker.systems.fide.rules import FideState, parse_seed_row


@settings(max_examples=60, deadline=None)
@given(streams())
def test_closing_a_month_again_right_after_publishes_nothing_and_changes_no_state(stream: Stream) -> None:
    _, store = seeded(stream)
    latest: str | None = None
    for item in stream.items:
        step(store, item)
        if not isinstance(item, Close):
            continue
        latest = item.period if latest is None else max(latest, item.period)
        states, calendar = dict(store.states), store.calendar
        assert store.close(item.period) == []
        # Nor does a close of any month already closed (docs/systems/fide.md, "Input": it does nothing).
        assert [store.close(m) for m in CLOSE_MONTHS if m <= latest] == [[] for m in CLOSE_MONTHS if m <= latest]
        assert store.states == states
        assert store.calendar == calendar


def counted_category(value: dict[str, Any]) -> str | None:
    """The category of a game the arena counts (rated, neither forfeited nor aborted, of a control
    of its list: section 3), or None."""
    if not value["rated"] or value["termination"] in ("forfeit", "aborted"):
        return None
    return RATED.get((value["time_control"]["base_seconds"], value["time_control"]["increment_seconds"]))


class Closes:
    """What the events say of the months, checked as they come: where each game is recorded (its
    month in UTC, a late one the oldest open month: section 4), and that a rating is closed for a
    month only once the month is closed, only if it has games of it, and once (7.3)."""

    def __init__(self) -> None:
        self.recorded: dict[str, set[str]] = defaultdict(set)  # per rating, its months not closed yet
        self.latest: str | None = None  # the latest closed month, L

    def closed(self, month: str) -> None:
        self.latest = month if self.latest is None else max(self.latest, month)

    def open_month(self, finished: str) -> str:
        own = MONTH_OF[finished]
        return own if self.latest is None or own > self.latest else month_after(self.latest)

    def check(self, update: Update[FideState], item: Item) -> None:
        e = event(update.payload)
        month = close_of(e.event_id)
        if e.kind == "period_game":
            assert isinstance(item, dict)
            assert e.detail.period == self.open_month(item["finished_at"])
            self.recorded[update.key].add(e.detail.period)
        elif month is not None:
            assert self.latest is not None and month <= self.latest  # only a closed month closes
            assert month in self.recorded[update.key]  # the rating had games of it; not closed yet
            self.recorded[update.key].remove(month)
            assert e.detail.period == e.state.closed_period == month
            assert e.state.rating_before_close == e.rating_before
            assert month not in [entry.period for entry in e.state.pending]

    def check_game(self, value: dict[str, Any], made: Updates) -> None:
        """A game (its first delivery) the arena does not count publishes nothing (section 3); a
        counted one first closes its players for the closed months they hold (white's, then
        black's), then publishes white's `period_game`, then black's (section 5)."""
        category = counted_category(value)
        if category is None:
            assert made == []
            return
        white, black = f"{value['white_id']}/{category}", f"{value['black_id']}/{category}"
        closes = [u.key for u in made if close_of(u.event.event_id) is not None]
        assert [u.key for u in made] == [*closes, white, black]
        assert closes == sorted(closes, key=lambda key: key != white)  # white's closes first

    def none_left(self) -> bool:
        """No rating holds games of a closed month."""
        return all(self.latest is None or m > self.latest for ms in self.recorded.values() for m in ms)


@settings(max_examples=60, deadline=None)
@given(streams(), st.data())
def test_each_rating_with_games_of_a_closed_month_is_closed_for_it_exactly_once(
    stream: Stream, data: st.DataObject
) -> None:
    """One close event for every rating with recorded games of a closed month, none for another,
    `closed_period` set by each; a close line closes every open month up to its own, oldest first, each
    in the byte order of its keys (docs/contract-v2.md, "The per-period systems: `fide` and `tornelo`").
    The same with a close that takes some ratings at once, the others closed by their next game or at
    the end."""
    for takes in (None, data.draw(takes_for(stream))):
        _, store = seeded(stream)
        closes = Closes()
        count = 0
        for item in stream.items:
            take = None
            if takes is not None and isinstance(item, Close):
                take, count = takes[count].__contains__, count + 1
            made = step(store, item, take)
            if isinstance(item, Close):
                closes.closed(item.period)
            for update in made:
                closes.check(update, item)
            if isinstance(item, dict):
                closes.check_game(item, made)
            if isinstance(item, Close) and takes is None:
                assert closes.none_left(), closes.recorded
                order = [(close_of(u.event.event_id) or "", u.key.encode()) for u in made]
                assert order == sorted(order)
        for update in store.finish():  # the close left in progress, finished
            closes.check(update, Close(""))
        assert closes.none_left(), closes.recorded


def month_games(draw: st.DrawFn, players: int, month: str, first: int, most: int) -> list[dict[str, Any]]:
    return [
        draw(game_value(first + i, players, month, counted=draw(BOOLEAN))) for i in range(draw(st.integers(1, most)))
    ]


@st.composite
def a_month_after_history(draw: st.DrawFn) -> tuple[Stream, list[dict[str, Any]], list[dict[str, Any]]]:
    """Seeding rows and a history of games of September and October 2026 (September closed or
    not), then November's games in two orders."""
    players = draw(PLAYER_COUNT)
    seeds = draw(st.lists(seed_row(players), max_size=8, unique_by=lambda r: r.key))
    history: list[Item] = [*month_games(draw, players, "2026-09", 0, 15)]
    if draw(st.booleans()):
        history.append(Close("2026-09"))
    history += month_games(draw, players, "2026-10", 100, 15)
    november = month_games(draw, players, "2026-11", 200, 25)
    return Stream(seeds, history), november, draw(st.permutations(november))


def close_events(updates: Updates, month: str) -> list[bytes]:
    return [u.payload for u in updates if close_of(u.event.event_id) == month]


@settings(max_examples=60, deadline=None)
@given(a_month_after_history())
def test_permuting_a_months_games_or_closing_the_month_before_them_first_changes_no_close_event(
    case: tuple[Stream, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """Example 16: November's close is the same byte for byte, whatever the order of November's
    games, and whether they are held (October open: counted at November's close) or counted at
    once (October closed before them)."""
    history, november, permuted = case
    held, _ = replay(Stream(history.seeds, [*history.items, *november, Close("2026-11")]))
    held_permuted, _ = replay(Stream(history.seeds, [*history.items, *permuted, Close("2026-11")]))
    at_once, _ = replay(Stream(history.seeds, [*history.items, Close("2026-10"), *permuted, Close("2026-11")]))
    expected = close_events(held, "2026-11")
    assert close_events(held_permuted, "2026-11") == expected
    assert close_events(at_once, "2026-11") == expected


DIGITS = re.compile(r"-?[0-9]+")


def shape(encoded: bytes) -> str:
    """The encoding with every number written as `#`."""
    return DIGITS.sub("#", encoded.decode())


def november_games(rng: random.Random, n: int) -> list[SystemGameFinished]:
    """n blitz games of November 2026 between p0 and p1-p4, colours and results at random."""
    games = []
    for i in range(n):
        opponent = rng.choice(PLAYERS[1:5])
        white, black = ("p0", opponent) if rng.random() < 0.5 else (opponent, "p0")
        value = {
            "event_id": f"e{i}",
            "game_id": f"g{i}",
            "finished_at": f"2026-11-{1 + i % 30:02d}T12:00:00Z",
            "rated": True,
            "time_control": {"base_seconds": 180, "increment_seconds": 0},
            "white_id": white,
            "black_id": black,
            "result": rng.choice(RESULTS),
            "termination": "checkmate",
        }
        games.append(parse(value))
    return games


@settings(max_examples=10, deadline=None)
@given(st.lists(seed_row(5), max_size=8, unique_by=lambda r: r.key), st.integers(0, 2**32))
def test_a_state_does_not_grow_with_the_games_counted_at_once(seeds: list[SeedRow], games_seed: int) -> None:
    """p0's blitz state and the event of his last game, after that game alone and after 1,000 games
    of November counted at once (October closed first), differ only in the digits of the totals
    (docs/systems/fide.md, "State and events, with an example")."""
    games = november_games(random.Random(games_seed), 1000)  # hypothesis's own draws would be thousands
    encoded: list[tuple[bytes, bytes]] = []
    for played in (games[-1:], games):
        store = new_store()
        for row in seeds:
            store.seed(row)
        store.close("2026-10")
        updates = [u for game in played for u in store.apply(game).updates if u.key == "p0/blitz"]
        state = store.state("p0/blitz")
        assert [(e.period, e.held) for e in state.pending] == [("2026-11", ())]
        encoded.append((FIDE_STATES.encode(state), updates[-1].payload))
    (state_1, event_1), (state_1000, event_1000) = encoded
    assert shape(state_1000) == shape(state_1)
    assert shape(event_1000) == shape(event_1)
    # 1,000 games take at most 3 more digits in the seq and in games, 5 in points and in expected
    # (hundredths), 9 in ratings (a sum of 1,000 ratings in hundredths), nothing else.
    assert len(state_1000) - len(state_1) <= 3 + 3 + 5 + 5 + 9


@st.composite
def two_k20_players(draw: st.DrawFn) -> Stream:
    """p0 and p1, each with 30 or more rated games, under 2400, 2400 never reached, no birth year;
    they play only each other (counted games of one category) over the months, with close lines."""
    seeds = [
        parse_seed_row(
            [
                p,
                "blitz",
                str(draw(st.integers(1500, 2350))),
                str(draw(st.integers(30, 200))),
                draw(st.sampled_from(["", "false"])),
                "",
            ]
        )
        for p in PLAYERS[:2]
    ]
    items: list[Item] = []
    now = 0
    for i in range(draw(st.integers(1, 80))):
        roll = draw(st.integers(0, 9))
        if roll == 0:
            now = min(now + 1, len(MONTHS) - 1)
        if roll == 1:
            items.append(Close(draw(st.sampled_from(MONTHS))))
        else:
            month = MONTHS[min(now + draw(st.integers(0, 1)), len(MONTHS) - 1)]
            items.append(draw(game_value(i, 2, month, counted=True, category="blitz")))
    return Stream(seeds, [*items, Close("2026-11")])


def is_k20(state: FideState) -> bool:
    """K 20 by the rules of 7.1 step 4 before the 700 rule: 30 games or more, 2400 never reached,
    no birth year (so never a junior)."""
    return state.rating is not None and state.rated_games >= 30 and not state.reached_2400 and state.birth_year is None


@settings(max_examples=60, deadline=None)
@given(two_k20_players())
def test_two_k20_players_who_only_play_each_other_change_by_exactly_opposite_amounts(stream: Stream) -> None:
    _, store = seeded(stream)
    for item in stream.items:
        before = dict(store.states)
        updates = step(store, item)
        if not isinstance(item, Close):
            continue
        closes: dict[str, dict[str, tuple[FideState, FideRatingChanged]]] = defaultdict(dict)
        for update in updates:
            e = event(update.payload)
            closes[e.detail.period or ""][e.player_id] = (before[update.key], e)
            before[update.key] = update.state
        for month, pair in closes.items():
            assert pair.keys() == {"p0", "p1"}, month  # one's games of a month are the other's
            (state_a, a), (state_b, b) = pair["p0"], pair["p1"]
            if not (is_k20(state_a) and is_k20(state_b)) or "rating_lost" in (a.kind, b.kind):
                continue
            assert a.kind == b.kind == "period_rating"
            assert a.detail.games == b.detail.games
            assert a.detail.games is not None and a.detail.k_factor == min(20, 700 // a.detail.games)
            assert a.delta is not None and b.delta is not None and a.delta == -b.delta


def own_row(key: str, state: FideState) -> SeedRow:
    """The row of a rated state's own rating and history, in the contract's syntax."""
    player, category = key.split("/")
    assert state.rating is not None
    reached = "true" if state.reached_2400 else "false"
    birth = "" if state.birth_year is None else str(state.birth_year)
    return parse_seed_row([player, category, str(state.rating // 100), str(state.rated_games), reached, birth])


# p0 2000 and p1 1900 in blitz (40 games each); p0 beats p1 in November 2026, a game recorded (p0's
# `pending` holds it); then p0's own row again, not forced: equal to his state in rating,
# rated_games, reached_2400 and birth_year, his pool empty, so skipped.
AGAIN_WITH_GAMES_PENDING = Stream(
    [parse_seed_row(["p0", "blitz", "2000", "40", "", ""]), parse_seed_row(["p1", "blitz", "1900", "40", "", ""])],
    [
        {
            "event_id": "e1",
            "game_id": "g1",
            "finished_at": "2026-11-10T12:00:00Z",
            "rated": True,
            "time_control": {"base_seconds": 180, "increment_seconds": 0},
            "white_id": "p0",
            "black_id": "p1",
            "result": "1-0",
            "termination": "checkmate",
        },
        Import(parse_seed_row(["p0", "blitz", "2000", "40", "", ""]), force=False),
    ],
)
# The same game, then another row for p0, forced: refused all the same while his game is pending.
FORCED_WITH_GAMES_PENDING = Stream(
    AGAIN_WITH_GAMES_PENDING.seeds,
    [
        AGAIN_WITH_GAMES_PENDING.items[0],
        Import(parse_seed_row(["p0", "blitz", "2100", "40", "", ""]), force=True),
    ],
)


@settings(max_examples=60, deadline=None)
@given(streams())
@example(AGAIN_WITH_GAMES_PENDING)
@example(FORCED_WITH_GAMES_PENDING)
def test_an_import_between_games_is_applied_skipped_or_refused_as_the_contract_says(stream: Stream) -> None:
    """docs/systems/fide.md, "Seeding rows", and docs/contract.md, "Seeding established ratings": a row
    over a rating never seen is imported; one equal to the rating's state, compared in rating,
    rated_games, reached_2400 and birth_year with an empty pool, is skipped; otherwise a rating with
    state is refused unless forced, and one with games not yet closed (`pending`) even forced. The
    imported state has the row's values, an empty pool, and the rating's own `closed_period` and
    `rating_before_close`. Some imports here are of a rated rating's own values again (`Import.again`);
    the explicit examples are such an import over a rating with games pending, and another row forced
    over it (random streams seldom force a row over a rating with games pending)."""
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
        reached, birth = cast(tuple[bool, int | None], row.extra)
        same = (row.rating, row.rated_games, reached, birth) == (
            current.rating,
            current.rated_games,
            current.reached_2400,
            current.birth_year,
        )
        if current.seq == 0:
            expected = SeedVerdict.IMPORTED
        elif same and not current.initial:
            expected = SeedVerdict.UNCHANGED
        elif not item.force or current.pending:
            expected = SeedVerdict.REFUSED
        else:
            expected = SeedVerdict.IMPORTED
        assert outcome.verdict is expected, (row, current)
        if outcome.update is not None:
            assert outcome.update.state == FideState(
                row.rating,
                row.rated_games,
                current.seq + 1,
                reached,
                birth,
                current.closed_period,
                current.rating_before_close,
            )
