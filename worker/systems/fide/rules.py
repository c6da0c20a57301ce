"""FIDE's ratings, one change per calendar month, as the project reads FIDE's Rating Regulations
of 2024 in their Rapid and Blitz version (readings F1-F24; the worked examples are tests:
tests/unit/rules/test_fide.py).

A rating changes only when its month (the rating period, UTC) closes. Until then each counted
game is *recorded* in both players' states (`pending`, one entry per month). A game of the
oldest open month is **counted at once**: its list ratings are both players' current ratings, so
the entry keeps totals (games, points, the sum of PD, the sum of the opponents' list ratings).
A game of a later month, recorded before the month before it is closed, is **held**: its
opponent and score are kept, and it is counted at the close with the opponent's list rating for
the month, read from his state (section 6): `rating_before_close` if his `closed_period` is that
month, else his `rating`. So the numbers of a close do not depend on the order in which a
month's games arrive, nor on the order in which its ratings are closed.

The close of month P for one rating (section 7): a rated player changes by K x sum(score - PD)
over his rated games, rounded to a whole number half away from zero, and loses his rating
below 1400; an unrated one pools his results against rated opponents over at most 26 months
and gets a first rating Ra + dp (at most 2200) from 5 games on, when it is 1400 or more.

Exact integers throughout: ratings are whole numbers, held in hundredths as every system's
(180000 is 1800); scores and PD in hundredths; Ra a fraction. The only roundings: the change
(half away from zero), p of a first rating (to a hundredth, .005 upwards), Ru (.5 upwards),
K after the 700 rule (floor).
"""

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, NamedTuple, cast

from schemas.close_line import FideCloseLine
from schemas.game_finished import GameFinished
from schemas.system_game import SystemGameFinished
from worker.rules.categories import Category, arena_category
from worker.rules.finished_at import month_at, month_named, month_number, month_of, next_month, refusal
from worker.rules.hundredths import ONE, RESULT_SCORES, Hundredths, Points, round_half_away, round_half_up
from worker.rules.interface import Change, Kind, Rated, SeedRow, Skip
from worker.rules.period_interface import Lookup
from worker.rules.seed_rows import rated_games, seed_fields, whole_rating
from worker.rules.tables import dp_for, pd_higher

LOWEST = Hundredths(1400 * ONE)  # the lowest published rating (7.1.4, 7.2.1)
HIGHEST_FIRST = 2200  # the highest initial rating (8.2.3), in points
FIRST_GAMES = 5  # games against rated opponents that a first rating needs (7.1.4)
POOL_MONTHS = 26  # an unrated player's results pool over at most 26 months, the closed one included
HYPOTHETICAL = 1800  # two hypothetical draws against 1800 (8.2.2), in points
CAP = 400  # a difference of more than 400 counts as 400 (8.3.1)
NOT_RATED_DIFFERENCE, NOT_RATED_ABOVE = 600, 2600  # R&B 7.3.1 from 1 December 2024 (F9)
K_NEW, K_NORMAL, K_TOP, K_JUNIOR = 40, 20, 10, 40
NEW_GAMES = 30  # K 40 until 30 games (F12)
TOP = 2400  # reached_2400: K 10 for good (F10, F11)
JUNIOR_BELOW, JUNIOR_YEARS = 2300, 18
K_TIMES_N = 700


class Held(NamedTuple):
    """A game recorded before its month's list existed: counted at the close (F5)."""

    opponent_id: str
    score: Hundredths  # 100, 50 or 0


class Entry(NamedTuple):
    """A rating's games of one month not yet closed, as totals (section 5): the games counted
    (`games`), their score, the sum of their PD (a rated player's) and of the opponents' list
    ratings; and the games held, one by one."""

    period: str
    games: int = 0
    points: Hundredths = Hundredths(0)
    expected: Hundredths = Hundredths(0)
    ratings: Hundredths = Hundredths(0)
    held: tuple[Held, ...] = ()


class Pooled(NamedTuple):
    """An unrated player's results of one month against rated opponents (7.2)."""

    period: str
    games: int
    points: Hundredths
    ratings: Hundredths


class FideState(NamedTuple):
    """A FIDE rating in one category, in the order of the contract's `state`; the default is a
    player never seen there. `rating` is whole (hundredths, a multiple of 100), None while unrated."""

    rating: Hundredths | None = None
    rated_games: int = 0
    seq: int = 0
    reached_2400: bool = False
    birth_year: int | None = None
    closed_period: str | None = None  # the latest month whose close published an event for it
    rating_before_close: Hundredths | None = None  # its rating before that close
    pending: tuple[Entry, ...] = ()  # one entry per month not yet closed, oldest first
    initial: tuple[Pooled, ...] = ()  # an unrated player's pool, oldest first


class FideDetail(NamedTuple):
    """The event's `detail`; None where a kind does not set a field."""

    period: str | None = None
    games: int | None = None
    points: Hundredths | None = None
    expected: Hundredths | None = None
    k_factor: int | None = None


UNSEEN = FideState()
Calendar = str | None  # the latest closed month L (None: no month closed yet)


# --- the arithmetic (sections 7 and 8)


def points(rating: Hundredths) -> int:
    return rating // ONE


def pd(rating: Hundredths, opponent: Hundredths) -> Hundredths:
    """Table B's PD of the player (F8): D = |R - R_o| counted as 400 when larger; H for the
    higher-rated, 1.00 - H for the lower, .50 each at equal ratings."""
    if rating == opponent:
        return Hundredths(50)
    high = pd_higher(Points(min(abs(points(rating) - points(opponent)), CAP)))
    return high if rating > opponent else Hundredths(ONE - high)


def rated_pair(rating: Hundredths, opponent: Hundredths) -> bool:
    """Whether a game between two list ratings is rated (F9: not when 600 apart or more with one
    of them above 2600)."""
    r, o = points(rating), points(opponent)
    return abs(r - o) < NOT_RATED_DIFFERENCE or (r <= NOT_RATED_ABOVE and o <= NOT_RATED_ABOVE)


def counted(entry: Entry, rating: Hundredths | None, opponent: Hundredths | None, score: Hundredths) -> Entry:
    """`entry` with one game counted, given both list ratings (7.1 step 1, 7.2 step 2): against an
    opponent unrated on the list it counts for nobody; a rated player's game outside the
    600-point rule counts with its PD; an unrated player's counts towards his pool."""
    # Built field by field (a named tuple's _replace costs several times more, on every game).
    period, games, total, expected, ratings, held = entry
    if opponent is None:
        return entry
    if rating is None:
        return Entry(period, games + 1, Hundredths(total + score), expected, Hundredths(ratings + opponent), held)
    if not rated_pair(rating, opponent):
        return entry
    expected = Hundredths(expected + pd(rating, opponent))
    return Entry(period, games + 1, Hundredths(total + score), expected, Hundredths(ratings + opponent), held)


def k_factor(state: FideState, rating: Hundredths, period: str, games: int) -> int:
    """K from the state before the close, the first rule that applies (F10-F12), then the 700
    rule (F13): K = floor(700 / n) when K x n > 700."""
    if state.rated_games < NEW_GAMES:
        k = K_NEW
    elif state.reached_2400:
        k = K_TOP
    elif (
        state.birth_year is not None
        and int(period[:4]) <= state.birth_year + JUNIOR_YEARS
        and points(rating) < JUNIOR_BELOW
    ):
        k = K_JUNIOR
    else:
        k = K_NORMAL
    return k if k * games <= K_TIMES_N else K_TIMES_N // games


def change(k: int, score: Hundredths, expected: Hundredths) -> int:
    """K x (S - sum PD) in whole points, rounded half away from zero (F14)."""
    return round_half_away(k * (score - expected), ONE)


def first_rating(pool: tuple[Pooled, ...]) -> int:
    """Ru of a pool (8.2, F19): Ra = (sum R_i + 2 x 1800) / (n + 2) exact; p = (S + 1) / (n + 2)
    to a hundredth, .005 upwards; Ru = Ra + dp(p) to a whole number, .5 upwards, at most 2200."""
    n = sum(e.games for e in pool)
    score = sum(e.points for e in pool)
    ratings = sum(e.ratings for e in pool)  # hundredths
    p = round_half_up(score + ONE, n + 2)  # hundredths: 100 x (S + 1) / (n + 2)
    ru = round_half_up(ratings + 2 * HYPOTHETICAL * ONE + dp_for(Hundredths(p)) * ONE * (n + 2), ONE * (n + 2))
    return min(ru, HIGHEST_FIRST)


# --- recording a game (section 5)


def with_entry(pending: tuple[Entry, ...], entry: Entry) -> tuple[Entry, ...]:
    """`pending` with `entry` in place of its month's (or inserted in month order)."""
    for i, e in enumerate(pending):
        if e.period == entry.period:
            return (*pending[:i], entry, *pending[i + 1 :])
        if e.period > entry.period:  # YYYY-MM strings sort as months do
            return (*pending[:i], entry, *pending[i:])
    return (*pending, entry)


def entry_of(pending: tuple[Entry, ...], period: str) -> Entry:
    for e in pending:
        if e.period == period:
            return e
    return Entry(period)


def recorded(
    state: FideState, period: str, opponent_id: str, opponent: Hundredths | None, score: Hundredths, at_once: bool
) -> FideState:
    """One player's state with the game recorded: counted at once with both list ratings (the
    current ones), or held (F5)."""
    rating, games, seq, reached, birth, closed, before, pending, initial = state
    entry = entry_of(pending, period)
    if at_once:
        entry = counted(entry, rating, opponent, score)
    else:
        entry = Entry(*entry[:5], (*entry.held, Held(opponent_id, score)))
    return FideState(rating, games, seq, reached, birth, closed, before, with_entry(pending, entry), initial)


@lru_cache(maxsize=1 << 8)
def recorded_detail(period: str) -> FideDetail:
    """The detail of a `period_game`: its month alone (one value a month, made once)."""
    return FideDetail(period)


def list_rating(state: FideState, period: str) -> Hundredths | None:
    """A player's list rating for month `period` while it is being closed (section 6): his rating
    before the close of `period` if that close already changed him, else his current rating."""
    return state.rating_before_close if state.closed_period == period else state.rating


# --- the close of month P for one rating (section 7)


def close(period: str, category: str, state: FideState, lookup: Lookup[FideState]) -> Change[FideState]:
    rating, games, seq, reached, birth, _, _, pending, initial = state  # rating: its list rating for P
    entry = entry_of(pending, period)
    for held in entry.held:
        opponent = list_rating(lookup(f"{held.opponent_id}/{category}"), period)
        entry = counted(entry, rating, opponent, held.score)
    remaining = tuple(e for e in pending if e.period != period)
    if rating is None:
        return _close_unrated(period, state, remaining, entry)
    n = entry.games
    if n == 0:
        closed = FideState(rating, games, seq, reached, birth, period, rating, remaining, initial)
        return Change(Kind.PERIOD_CLOSED, closed, detail=FideDetail(period, 0, Hundredths(0)))
    k = k_factor(state, rating, period, n)
    after = Hundredths(rating + change(k, entry.points, entry.expected) * ONE)
    detail = FideDetail(period, n, entry.points, entry.expected, k)
    if after < LOWEST:  # F15: unrated from the next list, afresh (no pool, no games, K 40 again)
        lost = FideState(None, 0, seq, False, birth, period, rating, remaining, ())
        return Change(Kind.RATING_LOST, lost, detail=detail)
    rated = FideState(after, games + n, seq, reached or points(after) >= TOP, birth, period, rating, remaining, initial)
    return Change(Kind.PERIOD_RATING, rated, detail=detail)


def _close_unrated(period: str, state: FideState, remaining: tuple[Entry, ...], entry: Entry) -> Change[FideState]:
    """7.2: the pool's window, the new results, the zero rule, a first rating from 5 games."""
    oldest = month_number(period) - (POOL_MONTHS - 1)
    pool = tuple(e for e in state.initial if month_number(e.period) >= oldest)
    if entry.games and (pool or entry.points):  # a first event scoring zero is disregarded (F18)
        pool = (*pool, Pooled(period, entry.games, entry.points, entry.ratings))
    games = sum(e.games for e in pool)
    score = Hundredths(sum(e.points for e in pool))
    detail = FideDetail(period, games, score)
    seq, birth = state.seq, state.birth_year
    if games >= FIRST_GAMES:
        ru = first_rating(pool)
        if ru * ONE >= LOWEST:
            rated = FideState(Hundredths(ru * ONE), games, seq, False, birth, period, None, remaining, ())
            return Change(Kind.FIRST_RATING, rated, detail=detail)
    closed = FideState(None, state.rated_games, seq, state.reached_2400, birth, period, None, remaining, pool)
    return Change(Kind.PERIOD_CLOSED, closed, detail=detail)


# --- seeding rows: player_id,category,rating,rated_games,reached_2400,birth_year (contract v2)

SEED_HEADER = ("player_id", "category", "rating", "rated_games", "reached_2400", "birth_year")
_YEAR = re.compile(r"[0-9]{4}")


def parse_seed_row(fields: list[str]) -> SeedRow:
    """One row as the contract writes it (F23); ValueError says which field is wrong. The row's
    own fields are `extra`: (reached_2400, birth_year), the first already given its default."""
    player_id, category, rating, games, reached, birth = seed_fields(fields, SEED_HEADER, tuple(Category))
    value = whole_rating(rating)
    if value * ONE < LOWEST:
        raise ValueError(f"rating: {rating} is below 1400, the lowest published rating")
    count = rated_games(games)
    if reached not in ("true", "false", ""):
        raise ValueError(f"reached_2400: {reached!r} is not true, false or empty")
    top = value >= TOP
    if reached == "false" and top:
        raise ValueError(f"reached_2400: false with a rating of {rating} (2400 or more reaches it)")
    if birth and not (_YEAR.fullmatch(birth) and int(birth) >= 1000):
        raise ValueError(f"birth_year: {birth!r} is not a year 1000-9999 in four digits")
    extra = (reached == "true" or top, int(birth) if birth else None)
    return SeedRow(player_id, Category(category), Hundredths(value * ONE), count, extra)


LAST_CLOSABLE = "9999-11"  # 9999-12 is never closed: the games after it would have no month

# --- the system the engine runs


@dataclass(frozen=True, slots=True)
class FideRules:
    """FIDE per month as a rating system (`worker.rules.interface.RatingSystem` and its per-period
    entry point `worker.rules.period_interface.PeriodSystem`): the arena's games, categories and
    counted games (F2); every counted game recorded, none rated at once."""

    name = "fide"
    game_model = SystemGameFinished
    unseen = UNSEEN
    categories = tuple(Category)
    kinds = (
        Kind.PERIOD_GAME,
        Kind.PERIOD_RATING,
        Kind.RATING_LOST,
        Kind.FIRST_RATING,
        Kind.PERIOD_CLOSED,
        Kind.IMPORTED,
    )
    skips = (Skip.RATED_FALSE, Skip.FORFEIT, Skip.ABORTED, Skip.UNRATED_TIME_CONTROL, Skip.DUPLICATE)
    paired_kinds = frozenset({Kind.PERIOD_GAME})  # a game records both players
    seed_header = SEED_HEADER
    fact_names = "white, black, result, termination, rated or time control"
    opening: ClassVar[Calendar] = None
    close_line = FideCloseLine

    def category(self, game: GameFinished) -> Category | Skip:
        return arena_category(game)

    def rate_game(self, game: GameFinished, category: str, white: FideState, black: FideState) -> Rated[FideState]:
        """Never called: `recorded_in` records every counted game in a month (F6)."""
        raise TypeError("fide rates no game at once: every counted game is recorded in its month")

    def facts(self, game: GameFinished) -> str:
        return ""  # v1's facts only

    def refuse(self, game: GameFinished, record_ms: int | None, allowance_seconds: int) -> str | None:
        """Section 4: an instant outside 0000-9999, or a future game (F22), as glicko2's."""
        return refusal(game.finished_at, record_ms, allowance_seconds)

    def recorded_in(self, game: GameFinished, calendar: Calendar) -> str:
        """The month of `finished_at` in UTC; a late game (its month closed) the oldest open month (F4)."""
        month = month_of(game.finished_at)
        return month if calendar is None or month > calendar else next_month(calendar)

    def periods_of(self, game: GameFinished) -> tuple[str, ...]:
        return ()  # L, read whole with every batch, says where any game goes

    def record(
        self, game: GameFinished, category: str, period: str, calendar: Calendar, white: FideState, black: FideState
    ) -> Rated[FideState]:
        """Counted at once when `period` is the oldest open month (its list ratings are the current
        ones: both players are closed for every closed month); held otherwise (section 5)."""
        at_once = calendar is not None and period == next_month(calendar)
        white_score, black_score = RESULT_SCORES[game.result]
        detail = recorded_detail(period)
        return Rated(
            Change(
                Kind.PERIOD_GAME,
                recorded(white, period, game.black_id, black.rating, white_score, at_once),
                detail=detail,
            ),
            Change(
                Kind.PERIOD_GAME,
                recorded(black, period, game.white_id, white.rating, black_score, at_once),
                detail=detail,
            ),
        )

    def pending(self, state: FideState) -> tuple[str, ...]:
        return tuple([e.period for e in state.pending])

    def closing(self, state: FideState, calendar: Calendar) -> tuple[str, ...]:
        pending = state.pending
        if calendar is None or not pending or pending[0].period > calendar:  # oldest first: none closed
            return ()
        return tuple([e.period for e in pending if e.period <= calendar])

    def to_mark(self, calendar: Calendar, period: str, recorded: Collection[str]) -> tuple[str, ...]:
        """A close of P later than L: every open month before P with recorded games, oldest first,
        then P (F21); a close of a month up to L closes nothing."""
        if calendar is not None and period <= calendar:
            return ()
        months = sorted(m for m in recorded if (calendar is None or m > calendar) and m < period)
        return (*months, period)

    def marked(self, calendar: Calendar, period: str) -> Calendar:
        return period

    def close(self, period: str, category: str, state: FideState, lookup: Lookup[FideState]) -> Change[FideState]:
        return close(period, category, state, lookup)

    def latest_due(self, now: int, grace_seconds: int) -> str | None:
        """The month before the one `now - grace_seconds` falls in (section 9: a month is due once its
        end plus the grace has passed); never past `9999-11` (`9999-12` is never closed)."""
        before = month_number(month_at(now - grace_seconds)) - 1
        return None if before < 0 else min(month_named(before), LAST_CLOSABLE)

    def latest_closed(self, calendar: Calendar) -> str | None:
        return calendar

    def closed_through(self, state: FideState) -> str | None:
        return state.closed_period

    def opponents(self, state: FideState, period: str) -> tuple[str, ...]:
        """The opponents of the games of `period` held in the state: their list ratings are read at its close."""
        return tuple({h.opponent_id: None for h in entry_of(state.pending, period).held})

    def seedable(self, state: FideState) -> bool:
        return not state.pending

    def numbered(self, state: FideState, seq: int) -> FideState:
        rating, games, _, reached, birth, closed, before, pending, initial = state
        return FideState(rating, games, seq, reached, birth, closed, before, pending, initial)

    def parse_seed_row(self, fields: list[str]) -> SeedRow:
        return parse_seed_row(fields)

    def seeded(self, row: SeedRow, current: FideState) -> FideState:
        """The row's rating and history with an empty pool, `closed_period` and
        `rating_before_close` kept (a close still reads them: section 6); a row equal to the state
        in rating, games, `reached_2400` and `birth_year`, over an empty pool, gives the state
        itself (skipped, even while it has games not yet closed); a switch-over's row carries the
        rebuilt state's own whole."""
        if len(row.extra) > 2:
            return cast(FideState, row.extra[2])._replace(seq=current.seq)
        reached, birth = cast(tuple[bool, int | None], row.extra)
        same = (row.rating, row.rated_games, reached, birth) == (
            current.rating,
            current.rated_games,
            current.reached_2400,
            current.birth_year,
        )
        if current.seq and same and not current.initial:
            return current  # equal as the contract compares (its pending games aside): skipped
        return FideState(
            row.rating, row.rated_games, current.seq, reached, birth, current.closed_period, current.rating_before_close
        )

    def row_of(self, player_id: str, category: str, state: FideState) -> SeedRow:
        # Contract v2 imports any state whole, an unrated one and its pool and pending games too.
        return SeedRow(
            player_id, category, state.rating, state.rated_games, (state.reached_2400, state.birth_year, state)
        )

    def imported_detail(self, current: FideState) -> None:
        return None
