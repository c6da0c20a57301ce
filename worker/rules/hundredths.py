"""Exact numbers: ratings, changes and probabilities as integer hundredths.

1800.20 is held as 180020. Nothing in the rules or the engine uses a float, with two exceptions
kept inside their systems' rules and rounded exactly on the way out: Glicko-2's steps inside
one game (`worker.systems.glicko2.rules`) and Tornelo's expected score (`worker.systems.tornelo.rules`, to
millionths). Two units, as types that `mypy --strict` keeps apart (at no cost at run time: they
are ints):
- `Hundredths`: everything computed: ratings, changes, scores, probabilities (1.00 = 100);
- `Points`: whole rating points: the displayed rating, the training rating, Table B's rating
  difference D and Table A's dp.
"""

from functools import lru_cache
from typing import NewType

Hundredths = NewType("Hundredths", int)
Points = NewType("Points", int)

ONE = Hundredths(100)  # 1.00, a whole point or a probability of 1


def hundredths(points: Points) -> Hundredths:
    """A whole number of points in hundredths: 7 -> 700."""
    return Hundredths(points * ONE)


def round_half_up(numerator: int, denominator: int) -> int:
    """The integer nearest to numerator/denominator, halves rounded upwards (towards +inf).

    The arena rounds ".5 upwards" (2215.50 -> 2216); for the non-negative values the rules
    round (ratings, rating differences, averages) this is also "half away from zero".
    """
    if denominator <= 0:
        raise ValueError("denominator must be positive")
    return (2 * numerator + denominator) // (2 * denominator)


def round_half_away(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded to the nearest integer, halves away from zero (a change
    that may be negative: uscf-cc's terms, fide's and tornelo's period changes)."""
    if denominator <= 0:
        raise ValueError("denominator must be positive")
    magnitude = (2 * abs(numerator) + denominator) // (2 * denominator)
    return magnitude if numerator >= 0 else -magnitude


# The scores (white's, black's) of a game's result, in hundredths.
RESULT_SCORES: dict[str, tuple[Hundredths, Hundredths]] = {
    "1-0": (Hundredths(100), Hundredths(0)),
    "1/2-1/2": (Hundredths(50), Hundredths(50)),
    "0-1": (Hundredths(0), Hundredths(100)),
}


def display(value: Hundredths) -> Points:
    """The displayed rating: the official rating rounded to an integer, .5 upwards."""
    return Points(round_half_up(value, ONE))


# Every event formats five or six numbers and most are ratings near the others: the latest
# formats are kept (a 2**16 entries cache: ~5 MB at most).
@lru_cache(maxsize=1 << 16)
def format_fixed2(value: Hundredths) -> str:
    """Two decimals exactly, as the contract encodes ratings: 180020 -> "1800.20", -720 -> "-7.20"."""
    sign = "-" if value < 0 else ""
    whole, cents = divmod(abs(value), ONE)
    return f"{sign}{whole}.{cents:02d}"


def parse_fixed2(text: str) -> Hundredths:
    """Parse a non-negative decimal with at most two decimals ("1800", "1800.5", "1800.25").

    Raises ValueError for anything else (signs, exponents, three decimals, spaces).
    """
    whole, dot, frac = text.partition(".")
    if not whole.isascii() or not whole.isdigit() or (dot and not (frac.isascii() and frac.isdigit())):
        raise ValueError(f"{text!r} is not a decimal number with at most two decimals")
    if len(frac) > 2:
        raise ValueError(f"{text!r} has more than two decimals")
    return Hundredths(int(whole) * ONE + int(frac.ljust(2, "0") or "0"))
