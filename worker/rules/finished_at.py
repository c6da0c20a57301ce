"""What the rules read of a game's `finished_at`, shared by the systems that read it (`glicko2`,
`fide`): its instant (cached: a player's latest game is read again at each of his games), the
input's two checks of it (docs/systems/glicko2.md and fide.md, "Input"), and its month in UTC (`fide`'s rating period).

Everything is integer arithmetic on the timestamp's digits (`worker.rules.instants`): every
fractional digit kept, the offset applied, a leap second `:60` counted as `:59`.
"""

from functools import lru_cache

from worker.rules.instants import DAY, civil_from_days, days_from_civil, instant

# The instants of the years 0000-9999 in UTC: the only ones a state may hold (glicko2 G17, fide 4).
FIRST_INSTANT, END_INSTANT = days_from_civil(0, 1, 1) * DAY, days_from_civil(10000, 1, 1) * DAY


@lru_cache(maxsize=1 << 16)
def cached_instant(timestamp: str) -> tuple[int, str]:
    return instant(timestamp)


def units(fraction: str, digits: int) -> int:
    """A fraction's digits as an integer count of 10^-digits (digits >= its length)."""
    return int(fraction.ljust(digits, "0")) if digits else 0


def refusal(finished_at: str, record_ms: int | None, allowance_seconds: int) -> str | None:
    """Why a game is bad input by its `finished_at`, or None: an instant outside the years
    0000-9999 in UTC; later than the record's timestamp plus the allowance (none without one)."""
    if record_ms is None and "0000" < finished_at[:4] < "9999":
        return None  # an offset moves an instant by less than a day: only 0000 and 9999 can leave
    seconds, fraction = cached_instant(finished_at)
    if not FIRST_INSTANT <= seconds < END_INSTANT:  # the fraction, in [0, 1), changes neither side
        return f"finished_at: {finished_at} is an instant outside the years 0000-9999 in UTC"
    if record_ms is None or record_ms < 0:
        return None
    # finished_at > (record_ms / 1000 + allowance), in integers: both sides x 1000 x 10^digits.
    digits = len(fraction)
    limit_ms = record_ms + allowance_seconds * 1000
    if (seconds * 10**digits + units(fraction, digits)) * 1000 > limit_ms * 10**digits:
        return (
            f"finished_at: {finished_at} is more than RATING_FUTURE_ALLOWANCE_SECONDS={allowance_seconds} after "
            f"the record's timestamp ({record_ms} ms)"
        )
    return None


_UTC_SUFFIXES = ("Z", "z", "+00:00", "-00:00")


def month_of(finished_at: str) -> str:
    """The month `YYYY-MM` of the instant in UTC (`2026-11-01T00:30:00+01:00` is `2026-10`). A
    timestamp already in UTC names its month in its first seven characters (a leap second, counted
    as :59 of its minute, stays in its day); any other is computed from its instant."""
    if finished_at.endswith(_UTC_SUFFIXES):
        return finished_at[:7]
    year, month, _ = civil_from_days(cached_instant(finished_at)[0] // DAY)
    return f"{year:04d}-{month:02d}"


def month_number(month: str) -> int:
    """A month `YYYY-MM` as a count of months since 0000-01 (0000-01 is 0): months subtract."""
    return int(month[:4]) * 12 + int(month[5:7]) - 1


def month_named(number: int) -> str:
    """The inverse of `month_number`."""
    return f"{number // 12:04d}-{number % 12 + 1:02d}"


@lru_cache(maxsize=1 << 8)  # read at every game (the month after the latest closed one)
def next_month(month: str) -> str:
    return month_named(month_number(month) + 1)


def month_at(unix_seconds: int) -> str:
    """The month `YYYY-MM` in UTC of an instant given in seconds since 1970-01-01T00:00:00Z."""
    year, month, _ = civil_from_days(unix_seconds // DAY)
    return f"{year:04d}-{month:02d}"
