"""Glicko-2, one game at a time in the lichess manner, as the project reads Glickman's paper and
lichess's code (readings G1-G20; the vectors and worked examples are tests:
tests/unit/rules/test_glicko2.py).

A player's state per category is his rating r and deviation RD (integer hundredths), his
volatility sigma (integer units of 10^-9), his rated games, the `finished_at` of his latest
game (`last_rated_at`, verbatim) and `seq`. Each game is a rating period of its own that adds
no growth; a player's RD grows instead with the days since his latest game (sigma^2 x 0.21436 a
day), read from the game's `finished_at`, never from a clock. White's first-move advantage
shifts each side's rating in the expected score only (lichess's standard colour advantage).

**The project's exception to "never floats"** (the other is Tornelo's expected score): inside
one game the steps of Glickman's algorithm are IEEE-754 doubles, with the platform's `exp`,
`log` and `sqrt`, and they live in this module only. Stored values enter as the double nearest
to their decimal; the results leave rounded half away from zero to hundredths (r, RD) and to
10^-9 (sigma), exactly (`worker.rules.hundredths`' integers from then on).

The steps take tau, a period's results (each with its colour shift) and the periods added in
step 6 as parameters, so that Glickman's own vector (tau 0.5, three games, one period added)
runs through the functions the service runs (tau 0.75, one game, none).
"""

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple, NewType, cast

from schemas.game_finished import GameFinished
from schemas.system_game import SystemGameFinished
from worker.rules.categories import Category, arena_category
from worker.rules.finished_at import cached_instant, refusal, units
from worker.rules.hundredths import Hundredths
from worker.rules.instants import DAY
from worker.rules.interface import Change, Kind, Rated, SeedRow, Skip
from worker.rules.seed_rows import fixed2, rated_games, seed_fields

Nanos = NewType("Nanos", int)  # a volatility in units of 10^-9: 0.09 is 90_000_000

SCALE = 173.7178  # the Glicko-2 scale: mu = (r - 1500) / SCALE, phi = RD / SCALE
TAU = 0.75
NEW_RATING, NEW_DEVIATION, NEW_VOLATILITY = Hundredths(150000), Hundredths(50000), Nanos(90_000_000)
MIN_DEVIATION, MAX_DEVIATION = 45.0, 500.0
MAX_VOLATILITY = 0.1
MAX_VOLATILITY_NANOS = Nanos(100_000_000)
FLOOR = 400.0  # the lowest rating
MIN_SEED_RATING = Hundredths(40000)
MIN_SEED_DEVIATION, MAX_SEED_DEVIATION = Hundredths(4500), Hundredths(50000)
MAX_CHANGE = 700.0  # the largest change of one game, around the stored rating
PERIODS_PER_DAY = 0.21436
COLOUR_ADVANTAGE = 11.782457  # rating points: white + half of it, black - half, in E only
EPSILON = 0.000001
MAX_ITERATIONS = 1000  # the iteration fails when its loop has run this many times (lichess)
SCORES = {"1-0": (1.0, 0.0), "1/2-1/2": (0.5, 0.5), "0-1": (0.0, 1.0)}


class GlickoState(NamedTuple):
    """A Glicko-2 rating in one category; the default is a player never seen there."""

    rating: Hundredths = NEW_RATING
    deviation: Hundredths = NEW_DEVIATION
    volatility: Nanos = NEW_VOLATILITY
    rated_games: int = 0
    last_rated_at: str | None = None  # the finished_at of his latest game, verbatim
    seq: int = 0


class Player(NamedTuple):
    """A player's values as one game uses them (step 1): r0, RD0 (grown), sigma0."""

    rating: float
    deviation: float
    volatility: float


class Result(NamedTuple):
    """One game of a rating period, from the player's side."""

    opponent: Player
    score: float  # 1, 0.5 or 0
    shift: float  # h: half the colour advantage, + as white, - as black (0: none)


class Computed(NamedTuple):
    """Steps 2-5's outcome, before the limits of step 6: r', RD', sigma' and each game's E."""

    rating: float
    deviation: float
    volatility: float
    expected: tuple[float, ...]


class NotConverged(Exception):
    """The volatility's iteration ran MAX_ITERATIONS times (G8): the game changes nothing."""


def pre_game(rating: float, deviation: float, volatility: float, days: float) -> Player:
    """Step 1: sigma0 = min(sigma, 0.1); RD0 = SCALE x sqrt(phi^2 + (d x 0.21436) x sigma0^2)
    clamped to [45, 500] (computed with d = 0 too, G16); r0 = max(r, 400)."""
    sigma0 = min(volatility, MAX_VOLATILITY)
    phi = deviation / SCALE
    grown = SCALE * math.sqrt(phi * phi + (days * PERIODS_PER_DAY) * (sigma0 * sigma0))
    return Player(max(rating, FLOOR), min(max(grown, MIN_DEVIATION), MAX_DEVIATION), sigma0)


def rating_period(player: Player, results: Sequence[Result], tau: float = TAU, periods_added: int = 0) -> Computed:
    """Steps 2-5 over a period's results (the service: one game, no period added)."""
    rating = player.rating
    mu = (rating - 1500) / SCALE
    phi0 = player.deviation / SCALE
    information = 0.0  # sum of g^2 E (1 - E): 1 / v
    improvement = 0.0  # sum of g (s - E): q, for one game
    expected = []
    for opponent, score, shift in results:
        phi_j = opponent.deviation / SCALE
        mu_a = (rating + shift - 1500) / SCALE
        mu_ja = (opponent.rating - shift - 1500) / SCALE
        g = 1 / _sqrt(1 + 3 * (phi_j * phi_j) / _PI2)
        e = 1 / (1 + _exp(-g * (mu_a - mu_ja)))
        information += g * g * e * (1 - e)
        improvement += g * (score - e)
        expected.append(e)
    v = 1 / information
    delta = v * improvement
    sigma1 = new_volatility(phi0, v, delta, player.volatility, tau)
    phi_star = phi0 if periods_added == 0 else _sqrt(phi0 * phi0 + periods_added * (sigma1 * sigma1))
    phi1 = 1 / _sqrt(1 / (phi_star * phi_star) + 1 / v)
    mu1 = mu + phi1 * phi1 * improvement
    return Computed(SCALE * mu1 + 1500, SCALE * phi1, sigma1, tuple(expected))


def new_volatility(phi: float, v: float, delta: float, sigma: float, tau: float) -> float:
    """Step 4: Glickman's step 5, the Illinois iteration, failing after MAX_ITERATIONS (G3, G8).
    f(x) = e^x (delta^2 - phi^2 - v - e^x) / (2 (phi^2 + v + e^x)^2) - (x - alpha) / tau^2, with
    its constant parts computed once (in the same order of operations: the same doubles)."""
    exp = _exp
    alpha = _log(sigma * sigma)
    tau2 = tau * tau
    spread = delta * delta - phi * phi - v  # delta^2 - phi^2 - v
    base = phi * phi + v  # phi^2 + v

    def f(x: float) -> float:
        ex = exp(x)
        d = base + ex
        return ex * (spread - ex) / (2 * (d * d)) - (x - alpha) / tau2

    a = alpha
    if delta * delta > base:
        b = _log(spread)
    else:
        k = 1
        b = alpha - k * tau
        while f(b) < 0:
            k += 1
            b = alpha - k * tau
    fa, fb = f(a), f(b)
    iterations = 0
    while abs(b - a) > EPSILON and iterations < MAX_ITERATIONS:
        iterations += 1
        c = a + (a - b) * fa / (fb - fa)
        fc = f(c)
        if fc * fb <= 0:
            a, fa = b, fb
        else:
            fa = fa / 2
        b, fb = c, fc
    if iterations == MAX_ITERATIONS:
        raise NotConverged(f"the volatility did not converge in {MAX_ITERATIONS} iterations")
    return exp(a / 2)


_exp, _log, _sqrt = math.exp, math.log, math.sqrt
_PI2 = math.pi * math.pi


def limited(rating: float, deviation: float, volatility: float, stored: float) -> tuple[float, float, float]:
    """Step 6, in this order: r' within 700 of the stored rating, then >= 400; RD' within
    [45, 500]; sigma' <= 0.1."""
    rating = max(min(rating, stored + MAX_CHANGE), stored - MAX_CHANGE)
    return max(rating, FLOOR), min(max(deviation, MIN_DEVIATION), MAX_DEVIATION), min(volatility, MAX_VOLATILITY)


def rounded(value: float, decimals: int) -> int:
    """The double `value` in integer units of 10^-decimals (2: hundredths), rounded half away
    from zero, exactly: a value within a millionth of a unit of a half (where the product's own
    rounding could decide) is rounded from the double's exact decimal expansion."""
    scaled = abs(value) * _UNITS[decimals]
    whole = int(scaled)
    rest = scaled - whole
    if -1e-6 < rest - 0.5 < 1e-6:
        magnitude = int(Decimal(abs(value)).scaleb(decimals).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    else:
        magnitude = whole + (rest > 0.5)
    return magnitude if value >= 0 else -magnitude


_UNITS = {2: 100, 9: 10**9}


def elapsed_days(since: str | None, until: str) -> float:
    """Days from `since` (a player's last_rated_at) to `until` (the game's finished_at), exactly
    from every digit, converted once to the nearest double; 0 when `since` is None or not earlier."""
    if since is None:
        return 0.0
    (s0, f0), (s1, f1) = cached_instant(since), cached_instant(until)
    if (s1, f1) <= (s0, f0):
        return 0.0
    digits = max(len(f0), len(f1))  # both fractions in units of 10^-digits: integers, exactly
    scale: int = 10**digits
    elapsed = (s1 - s0) * scale + units(f1, digits) - units(f0, digits)
    return elapsed / (DAY * scale)  # int / int: the nearest double


def rate(
    white: GlickoState, black: GlickoState, finished_at: str, result: str
) -> tuple[Change[GlickoState], Change[GlickoState]]:
    """What a counted game finishing at `finished_at` does to both players (section 6): each
    from both players' values before it (G5). NotConverged if either iteration fails."""
    w, b = _pre_game(white, finished_at), _pre_game(black, finished_at)
    white_score, black_score = SCORES[result]
    half = COLOUR_ADVANTAGE / 2
    white_new = rating_period(w, (Result(b, white_score, half),))
    black_new = rating_period(b, (Result(w, black_score, -half),))
    return _change(white, w, white_new, finished_at), _change(black, b, black_new, finished_at)


def _pre_game(state: GlickoState, finished_at: str) -> Player:
    days = elapsed_days(state.last_rated_at, finished_at)
    return pre_game(state.rating / 100, state.deviation / 100, state.volatility / 1e9, days)


def _change(before: GlickoState, used: Player, new: Computed, finished_at: str) -> Change[GlickoState]:
    rating, deviation, volatility = limited(new.rating, new.deviation, new.volatility, before.rating / 100)
    last = before.last_rated_at
    if last is None or cached_instant(finished_at) >= cached_instant(last):
        last = finished_at  # an equal instant written differently: the new string (G15)
    after = GlickoState(
        Hundredths(rounded(rating, 2)),
        Hundredths(rounded(deviation, 2)),
        Nanos(rounded(volatility, 9)),
        before.rated_games + 1,
        last,
        before.seq,
    )
    # The detail the event publishes: E, and the RD and sigma the game used.
    detail = (Hundredths(rounded(used.deviation, 2)), Nanos(min(before.volatility, MAX_VOLATILITY_NANOS)))
    return Change(Kind.RATED_GAME, after, None, Hundredths(rounded(new.expected[0], 2)), detail)


# --- the input's two checks of finished_at (section 5): `worker.rules.finished_at.refusal`


# --- seeding rows: player_id,category,rating,rated_games,deviation,volatility (contract v2)

SEED_HEADER = ("player_id", "category", "rating", "rated_games", "deviation", "volatility")
_VOLATILITY = re.compile(r"([0-9]+)(?:\.([0-9]{1,9}))?")


def parse_volatility(text: str) -> Nanos:
    """ASCII digits optionally followed by `.` and one to nine digits, in units of 10^-9."""
    m = _VOLATILITY.fullmatch(text) if text.isascii() else None
    if m is None:
        raise ValueError(f"{text!r} is not a decimal with at most nine decimals")
    whole, fraction = m.groups()
    return Nanos(int(whole) * 10**9 + int((fraction or "").ljust(9, "0")))


def parse_seed_row(fields: list[str]) -> SeedRow:
    """One row as the contract writes it; ValueError says which field is wrong. Empty deviation
    and volatility mean 500.00 and 0.09 (G13), given before the comparison with the state."""
    player_id, category, rating, games, deviation, volatility = seed_fields(fields, SEED_HEADER, tuple(Category))
    value = fixed2("rating", rating)
    if value < MIN_SEED_RATING:
        raise ValueError(f"rating: {rating} is below 400.00")
    count = rated_games(games)
    if (deviation == "") != (volatility == ""):
        raise ValueError("deviation, volatility: give both or neither")
    if deviation == "":
        if count > 0:
            raise ValueError("deviation, volatility: a rating with rated games must give both")
        return SeedRow(player_id, Category(category), value, count, (NEW_DEVIATION, NEW_VOLATILITY))
    rd = fixed2("deviation", deviation)
    if not MIN_SEED_DEVIATION <= rd <= MAX_SEED_DEVIATION:
        raise ValueError(f"deviation: {deviation} is not within 45.00-500.00")
    try:
        sigma = parse_volatility(volatility)
    except ValueError as e:
        raise ValueError(f"volatility: {e}") from None
    if not 0 < sigma <= MAX_VOLATILITY_NANOS:
        raise ValueError(f"volatility: {volatility} is not above 0 and at most 0.1")
    return SeedRow(player_id, Category(category), value, count, (Hundredths(rd), sigma))


# --- the system the engine runs


@dataclass(frozen=True, slots=True)
class GlickoRules:
    """Glicko-2 as a rating system (see `worker.rules.interface.RatingSystem`): the arena's games,
    categories and counted games (G11), a rated_game for both players of every counted game."""

    name = "glicko2"
    game_model = SystemGameFinished
    unseen = GlickoState()
    categories = tuple(Category)
    kinds = (Kind.RATED_GAME, Kind.IMPORTED)
    skips = (
        Skip.RATED_FALSE,
        Skip.FORFEIT,
        Skip.ABORTED,
        Skip.UNRATED_TIME_CONTROL,
        Skip.NOT_CONVERGED,
        Skip.DUPLICATE,
    )
    paired_kinds = frozenset({Kind.RATED_GAME})
    seed_header = SEED_HEADER
    fact_names = "white, black, result, termination, rated or time control"

    def category(self, game: GameFinished) -> Category | Skip:
        """Section 3 (G11): the arena's counted games and categories."""
        return arena_category(game)

    def rate_game(
        self, game: GameFinished, category: str, white: GlickoState, black: GlickoState
    ) -> Rated[GlickoState] | Skip:
        try:
            return Rated(*rate(white, black, game.finished_at, game.result))
        except NotConverged:
            return Skip.NOT_CONVERGED

    def facts(self, game: GameFinished) -> str:
        return ""  # v1's facts only

    def refuse(self, game: GameFinished, record_ms: int | None, allowance_seconds: int) -> str | None:
        return refusal(game.finished_at, record_ms, allowance_seconds)

    def numbered(self, state: GlickoState, seq: int) -> GlickoState:
        return GlickoState(state.rating, state.deviation, state.volatility, state.rated_games, state.last_rated_at, seq)

    def parse_seed_row(self, fields: list[str]) -> SeedRow:
        return parse_seed_row(fields)

    def seeded(self, row: SeedRow, current: GlickoState) -> GlickoState:
        """The row's values; `last_rated_at` null for a row of the file (its first game grows
        nothing), the rebuilt one for a switch-over's (G20)."""
        assert row.rating is not None
        deviation, volatility, *rest = row.extra
        last = cast(str | None, rest[0]) if rest else None
        return GlickoState(
            row.rating, cast(Hundredths, deviation), cast(Nanos, volatility), row.rated_games, last, current.seq
        )

    def row_of(self, player_id: str, category: str, state: GlickoState) -> SeedRow:
        extra = (state.deviation, state.volatility, state.last_rated_at)
        return SeedRow(player_id, category, state.rating, state.rated_games, extra)

    def imported_detail(self, current: GlickoState) -> tuple[Hundredths | None, Nanos | None]:
        """An import's deviation and volatility before: the stored ones, or none for a new rating."""
        return (current.deviation, current.volatility) if current.seq else (None, None)
