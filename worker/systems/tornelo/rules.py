"""Tornelo's default Elo, one change per tournament, as the project reads Tornelo's description of
it (readings T1-T22; the worked examples are tests: tests/unit/rules/test_tornelo.py). The
source gives the method's shape, not its numbers: K per category and the bonus factor are
settings (`RATING_TORNELO_K`, `RATING_TORNELO_BONUS_FACTOR`), the player's K modifier is seeded.

A game of an open tournament is *recorded* in both players' states (`pending`, one entry per
tournament, in the order of their first game), valued with both ratings at that moment (T7):
its expected score E when both are rated, its performance (the opponent's rating + 400 for a
win, - 400 for a loss; 1000 for an unrated opponent of an unrated player, T15) when it has one.
The entry keeps totals of both, because whether a player is established is decided when the
tournament ends (T19). A game with no tournament, or of an ended one, is rated at once as an
event of its own (7.4).

When a tournament ends, every rating with an entry of it changes once (section 7): an
established player (rated, 20 games or more) by (SD + Bonus) x K x modifier, SD = points - sum E,
Bonus = factor x max(0, SD - 1), rounded half away from zero, never below 100; an unrated or
provisional one to the average of all his performances so far, within 100-2700.

**The project's second exception to "never floats"** (the first is Glicko-2's game step): E is
computed in IEEE double, 1 / (1 + 10^((R_opp - R)/400)), and rounded to millionths; for whole
ratings no value lies within 1e-10 of a rounding tie, so the result is exact (docs/systems/tornelo.md, and
a test against an exact computation of every difference from -3000 to 3000). Everything else is
integers: ratings whole (held in hundredths, as every system's), scores and the factor and
modifiers in hundredths, E in millionths.
"""

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple, NewType, cast

from schemas.close_line import TorneloCloseLine
from schemas.game_finished import GameFinished
from schemas.tornelo_game import TorneloGameFinished
from worker.rules.categories import Category, arena_category
from worker.rules.hundredths import ONE, RESULT_SCORES, Hundredths, round_half_away, round_half_up
from worker.rules.interface import Change, Kind, Rated, SeedRow, Skip
from worker.rules.period_interface import Lookup
from worker.rules.seed_rows import fixed2, rated_games, seed_fields, whole_rating

Millionths = NewType("Millionths", int)  # an expected score, or a sum of them: 0.240253 is 240253

MILLION = 1_000_000
PROVISIONAL_GAMES = 20  # established from 20 games (T13, T14)
FLOOR, PROVISIONAL_LOW, PROVISIONAL_HIGH = 100, 100, 2700  # points
UNRATED_OPPONENT = 1000  # an unrated player's unrated opponent (T15)
PERFORMANCE = {100: 400, 50: 0, 0: -400}  # the "algorithm of 400", by score in hundredths
K_ABOVE = 2200  # the second K above this rating (T11, strictly)
DEFAULT_K: Mapping[str, tuple[int, int]] = MappingProxyType({"rapid": (20, 10), "blitz": (20, 10), "bullet": (10, 5)})
DEFAULT_BONUS_FACTOR = Hundredths(100)
DEFAULT_MODIFIER = Hundredths(100)
MIN_MODIFIER, MAX_MODIFIER = Hundredths(1), Hundredths(1000)


class Entry(NamedTuple):
    """A rating's games of one tournament not yet ended, as totals (section 5): those against a
    rated opponent while rated (`games`, their score, the sum of their E), and those with a
    performance (their count, score and the sum of their performances, in points)."""

    tournament_id: str | None  # None only for a one-game event with no tournament
    games: int = 0
    points: Hundredths = Hundredths(0)
    expected: Millionths = Millionths(0)
    performance_games: int = 0
    performance_points: Hundredths = Hundredths(0)
    performance_sum: int = 0


class TorneloState(NamedTuple):
    """A Tornelo rating in one category, in the order of the contract's `state`; the default is a
    player never seen there. `rating` is whole (hundredths, a multiple of 100), None while unrated;
    `performance_sum` the sum a provisional rating averages (None unrated or established)."""

    rating: Hundredths | None = None
    rated_games: int = 0
    seq: int = 0
    k_modifier: Hundredths = DEFAULT_MODIFIER
    performance_sum: int | None = None
    pending: tuple[Entry, ...] = ()  # one entry per tournament not yet ended, by first game


class TorneloDetail(NamedTuple):
    """The event's `detail`; None where a kind does not set a field."""

    tournament_id: str | None = None
    games: int | None = None
    points: Hundredths | None = None
    expected: Millionths | None = None
    k_factor: int | None = None
    k_modifier: Hundredths | None = None


UNSEEN = TorneloState()


class Ended:
    """Tornelo's calendar: the ended tournaments, in the order they were marked (section 4). Marks
    only append, so every calendar is a prefix, of its own length, of one shared record
    (tournament -> its place): a mark costs O(1), not a copy of every tournament ever ended (the
    ends are kept for good), and an earlier calendar stays what it was."""

    __slots__ = ("_places", "_size")

    def __init__(self, places: dict[str, int] | None = None, size: int = 0) -> None:
        self._places = {} if places is None else places
        self._size = size

    def __contains__(self, tournament: object) -> bool:
        place = self._places.get(tournament) if isinstance(tournament, str) else None
        return place is not None and place < self._size

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[str]:
        """The ended tournaments in the order they were marked."""
        return iter(sorted((t for t, i in self._places.items() if i < self._size), key=self._places.__getitem__))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ended) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal by content, which a mark extends

    def __repr__(self) -> str:
        return f"Ended({list(self)!r})"

    def place(self, tournament: str) -> int:
        """Its place in the order of the marks (0 first)."""
        return self._places[tournament]

    def marked(self, tournament: str) -> "Ended":
        """This calendar with `tournament` marked ended last (itself if it has ended already)."""
        if tournament in self:
            return self
        places = self._places
        if len(places) != self._size:  # marked from an earlier calendar: a record of its own from here
            places = {t: i for t, i in places.items() if i < self._size}
        places[tournament] = self._size
        return Ended(places, self._size + 1)


# --- the arithmetic (sections 6 and 7)


EXACT_WITHIN = 3000  # beyond a difference of 3000 points E rounds to 0 or 1 (section 6)


def expected(difference: int) -> Millionths:
    """E of a player rated `difference` points below his opponent (R_opp - R), in millionths:
    1 / (1 + 10^(difference/400)) in IEEE double, rounded to nearest (no ties occur, section 6).
    A difference beyond 3000 points gives what 3000 gives, 0 or 1 (10^(d/400) would overflow a
    double from about 123,000 points: an established rating has no ceiling)."""
    return _expected(max(-EXACT_WITHIN, min(EXACT_WITHIN, difference)))


@lru_cache(maxsize=2 * EXACT_WITHIN + 1)  # every difference: E is read twice per recorded game
def _expected(difference: int) -> Millionths:
    return Millionths(round(MILLION / (1 + 10 ** (difference / 400))))


def valued(rating: Hundredths | None, opponent: Hundredths | None, score: Hundredths, tournament: str | None) -> Entry:
    """One game as section 5 values it for a player, from both ratings now: E when both are
    rated; a performance unless he is rated and the opponent is not (T15)."""
    if rating is not None and opponent is not None:
        e = expected((opponent - rating) // ONE)
        return Entry(tournament, 1, score, e, 1, score, opponent // ONE + PERFORMANCE[score])
    if opponent is not None:
        return Entry(tournament, 0, Hundredths(0), Millionths(0), 1, score, opponent // ONE + PERFORMANCE[score])
    if rating is None:
        return Entry(tournament, 0, Hundredths(0), Millionths(0), 1, score, UNRATED_OPPONENT + PERFORMANCE[score])
    return Entry(tournament)


def added(entry: Entry, game: Entry) -> Entry:
    return Entry(
        entry.tournament_id,
        entry.games + game.games,
        Hundredths(entry.points + game.points),
        Millionths(entry.expected + game.expected),
        entry.performance_games + game.performance_games,
        Hundredths(entry.performance_points + game.performance_points),
        entry.performance_sum + game.performance_sum,
    )


def period_change(sd: int, k: int, modifier: Hundredths, factor: Hundredths) -> int:
    """(SD + Bonus) x K x modifier in whole points, half away from zero (T9, T12): SD in
    millionths, Bonus = factor x max(0, SD - 1), factor and modifier in hundredths; exact."""
    numerator = (sd * ONE + factor * max(0, sd - MILLION)) * k * modifier
    return round_half_away(numerator, ONE * MILLION * ONE)


@dataclass(frozen=True, slots=True)
class Parameters:
    """The settings of the method (section 2): K per category (at or below 2200, above), and the
    bonus factor in hundredths."""

    k: Mapping[str, tuple[int, int]] = field(default_factory=lambda: DEFAULT_K)
    bonus_factor: Hundredths = DEFAULT_BONUS_FACTOR


def settled(state: TorneloState, entry: Entry, category: str, parameters: Parameters) -> Change[TorneloState]:
    """What an entry does to a rating, by its status now (7.1, 7.2); `state`'s pending is kept as
    given (the caller removes a closed tournament's entry)."""
    # Built field by field (a named tuple's _replace costs several times more, at every close).
    rating, rated_games, seq, modifier, performance_sum, pending = state
    tournament = entry.tournament_id
    if rating is not None and rated_games >= PROVISIONAL_GAMES:  # 7.1: established
        n = entry.games
        if n == 0:
            return Change(Kind.PERIOD_CLOSED, state, detail=TorneloDetail(tournament, 0, Hundredths(0)))
        k = parameters.k[category][rating > K_ABOVE * ONE]
        sd = entry.points * (MILLION // ONE) - entry.expected
        delta = period_change(sd, k, modifier, parameters.bonus_factor)
        new = Hundredths(max(FLOOR * ONE, rating + delta * ONE))
        after = TorneloState(new, rated_games + n, seq, modifier, performance_sum, pending)
        detail = TorneloDetail(tournament, n, entry.points, entry.expected, k, modifier)
        return Change(Kind.PERIOD_RATING, after, detail=detail)
    n = entry.performance_games  # 7.2: unrated or provisional
    if n == 0:
        return Change(Kind.PERIOD_CLOSED, state, detail=TorneloDetail(tournament, 0, Hundredths(0)))
    total = (performance_sum or 0) + entry.performance_sum
    games = rated_games + n
    average = min(max(round_half_up(total, games), PROVISIONAL_LOW), PROVISIONAL_HIGH)
    kept = None if games >= PROVISIONAL_GAMES else total
    after = TorneloState(Hundredths(average * ONE), games, seq, modifier, kept, pending)
    return Change(Kind.PROVISIONAL_RATING, after, detail=TorneloDetail(tournament, n, entry.performance_points))


def recorded(state: TorneloState, game: Entry) -> TorneloState:
    """The state with a game of an open tournament added to its entry (created last if new)."""
    rating, rated_games, seq, modifier, performance_sum, pending = state
    for i, e in enumerate(pending):
        if e.tournament_id == game.tournament_id:
            pending = (*pending[:i], added(e, game), *pending[i + 1 :])
            break
    else:
        pending = (*pending, game)
    return TorneloState(rating, rated_games, seq, modifier, performance_sum, pending)


# --- seeding rows: player_id,category,rating,rated_games,k_modifier (contract v2)

SEED_HEADER = ("player_id", "category", "rating", "rated_games", "k_modifier")


def parse_seed_row(fields: list[str]) -> SeedRow:
    """One row as the contract writes it (T17, T20); ValueError says which field is wrong. The
    row's own field is `extra`: (k_modifier,), in hundredths, its default given."""
    player_id, category, rating, games, modifier = seed_fields(fields, SEED_HEADER, tuple(Category))
    value, count = whole_rating(rating), rated_games(games)
    if count < PROVISIONAL_GAMES and not PROVISIONAL_LOW <= value <= PROVISIONAL_HIGH:
        raise ValueError(f"rating: {rating} is not within 100-2700, as a provisional rating (under 20 games) must be")
    if value < FLOOR:
        raise ValueError(f"rating: {rating} is below 100, the floor")
    k_modifier = DEFAULT_MODIFIER
    if modifier:
        k_modifier = fixed2("k_modifier", modifier)
        if not MIN_MODIFIER <= k_modifier <= MAX_MODIFIER:
            raise ValueError(f"k_modifier: {modifier} is not within 0.01-10.00")
    return SeedRow(player_id, Category(category), Hundredths(value * ONE), count, (k_modifier,))


# --- the system the engine runs


@dataclass(frozen=True, slots=True)
class TorneloRules:
    """Tornelo per tournament as a rating system (`worker.rules.interface.RatingSystem` and its
    per-period entry point `worker.rules.period_interface.PeriodSystem`): the arena's games,
    categories and counted games (T18), recorded in their tournament or rated at once."""

    parameters: Parameters = field(default_factory=Parameters)

    name = "tornelo"
    game_model = TorneloGameFinished
    unseen = UNSEEN
    categories = tuple(Category)
    kinds = (Kind.PERIOD_GAME, Kind.PERIOD_RATING, Kind.PROVISIONAL_RATING, Kind.PERIOD_CLOSED, Kind.IMPORTED)
    skips = (Skip.RATED_FALSE, Skip.FORFEIT, Skip.ABORTED, Skip.UNRATED_TIME_CONTROL, Skip.DUPLICATE)
    paired_kinds = frozenset({Kind.PERIOD_GAME})  # a recorded game records both players
    seed_header = SEED_HEADER
    fact_names = "white, black, result, termination, rated, time control or tournament_id"
    close_line = TorneloCloseLine

    @property
    def opening(self) -> Ended:
        return Ended()  # a record of its own for each deployment (marks append to it)

    def category(self, game: GameFinished) -> Category | Skip:
        return arena_category(game)

    def facts(self, game: GameFinished) -> str:
        """`tournament_id`, absent and null alike (section 3): a redelivery with another is a conflict."""
        tournament = _tornelo(game).tournament_id
        return "" if tournament is None else f"tournament_id={tournament}"

    def refuse(self, game: GameFinished, record_ms: int | None, allowance_seconds: int) -> None:
        return None  # the model's checks are all

    def recorded_in(self, game: GameFinished, calendar: Ended) -> str | None:
        """Its tournament unless that has ended; None (rated at once) otherwise (T3, T5)."""
        tournament = _tornelo(game).tournament_id
        return None if tournament is None or tournament in calendar else tournament

    def periods_of(self, game: GameFinished) -> tuple[str, ...]:
        tournament = _tornelo(game).tournament_id
        return () if tournament is None else (tournament,)

    def record(
        self,
        game: GameFinished,
        category: str,
        period: str,
        calendar: Ended,
        white: TorneloState,
        black: TorneloState,
    ) -> Rated[TorneloState]:
        """Both players valued from the states before the game (section 5)."""
        white_score, black_score = RESULT_SCORES[game.result]
        w = valued(white.rating, black.rating, white_score, period)
        b = valued(black.rating, white.rating, black_score, period)
        both = white.rating is not None and black.rating is not None
        return Rated(
            Change(
                Kind.PERIOD_GAME,
                recorded(white, w),
                detail=TorneloDetail(period, expected=w.expected if both else None),
            ),
            Change(
                Kind.PERIOD_GAME,
                recorded(black, b),
                detail=TorneloDetail(period, expected=b.expected if both else None),
            ),
        )

    def rate_game(
        self, game: GameFinished, category: str, white: TorneloState, black: TorneloState
    ) -> Rated[TorneloState]:
        """A one-game event (7.4): each player settled with the entry of that game alone, both from
        the states before it; a player it does not change gets no event."""
        tournament = _tornelo(game).tournament_id
        white_score, black_score = RESULT_SCORES[game.result]
        w = settled(white, valued(white.rating, black.rating, white_score, tournament), category, self.parameters)
        b = settled(black, valued(black.rating, white.rating, black_score, tournament), category, self.parameters)
        return Rated(
            None if w.kind is Kind.PERIOD_CLOSED else w,
            None if b.kind is Kind.PERIOD_CLOSED else b,
        )

    def pending(self, state: TorneloState) -> tuple[str, ...]:
        return tuple([cast(str, e.tournament_id) for e in state.pending])

    def closing(self, state: TorneloState, calendar: Ended) -> tuple[str, ...]:
        """Its entries of ended tournaments, in the order they were marked ended (section 4)."""
        ended = [cast(str, e.tournament_id) for e in state.pending if e.tournament_id in calendar]
        return tuple(sorted(ended, key=calendar.place)) if ended else ()

    def to_mark(self, calendar: Ended, period: str, recorded: Collection[str]) -> tuple[str, ...]:
        """The tournament, unless it has ended already (a close of it then does nothing)."""
        return () if period in calendar else (period,)

    def marked(self, calendar: Ended, period: str) -> Ended:
        return calendar.marked(period)

    def close(
        self, period: str, category: str, state: TorneloState, lookup: Lookup[TorneloState]
    ) -> Change[TorneloState]:
        """The end of tournament `period` for a rating with an entry of it (section 7)."""
        rating, rated_games, seq, modifier, performance_sum, pending = state
        entry = next(e for e in pending if e.tournament_id == period)
        remaining = tuple([e for e in pending if e.tournament_id != period])
        return settled(
            TorneloState(rating, rated_games, seq, modifier, performance_sum, remaining),
            entry,
            category,
            self.parameters,
        )

    def latest_due(self, now: int, grace_seconds: int) -> str | None:
        return None  # a tournament closes when its end is read, not by the clock

    def latest_closed(self, calendar: Ended) -> str | None:
        return next(reversed(list(calendar)), None)

    def closed_through(self, state: TorneloState) -> str | None:
        return None

    def opponents(self, state: TorneloState, period: str) -> tuple[str, ...]:
        return ()  # its games were valued when recorded: a close reads no other rating

    def seedable(self, state: TorneloState) -> bool:
        return True  # its pending games were valued when recorded: a seeded rating keeps them

    def numbered(self, state: TorneloState, seq: int) -> TorneloState:
        rating, rated_games, _, modifier, performance_sum, pending = state
        return TorneloState(rating, rated_games, seq, modifier, performance_sum, pending)

    def parse_seed_row(self, fields: list[str]) -> SeedRow:
        return parse_seed_row(fields)

    def seeded(self, row: SeedRow, current: TorneloState) -> TorneloState:
        """The row's rating, games and modifier over `current`, keeping its pending games;
        `performance_sum` rating x games under 20 games, else None. A row equal to the state in rating,
        games and modifier gives the state itself (docs/systems/tornelo.md, "Seeding rows": equality
        compares those); a switch-over's row carries the rebuilt state whole."""
        if len(row.extra) > 1:
            return cast(TorneloState, row.extra[1])._replace(seq=current.seq)
        (modifier,) = cast(tuple[Hundredths], row.extra)
        if current.seq and (row.rating, row.rated_games, modifier) == (
            current.rating,
            current.rated_games,
            current.k_modifier,
        ):
            return current
        assert row.rating is not None
        total = None if row.rated_games >= PROVISIONAL_GAMES else row.rating // ONE * row.rated_games
        return TorneloState(row.rating, row.rated_games, current.seq, modifier, total, current.pending)

    def row_of(self, player_id: str, category: str, state: TorneloState) -> SeedRow:
        return SeedRow(player_id, category, state.rating, state.rated_games, (state.k_modifier, state))

    def imported_detail(self, current: TorneloState) -> None:
        return None


def _tornelo(game: GameFinished) -> TorneloGameFinished:
    """A deployment of this system decodes its input with `TorneloRules.game_model`."""
    return cast(TorneloGameFinished, game)
