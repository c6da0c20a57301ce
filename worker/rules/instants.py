"""Instants of RFC 3339 timestamps by integer arithmetic, for ordering games by when they ended.

The input's `finished_at` is kept verbatim; ordering needs it as an instant. Python's
`datetime` cannot hold year 0000 (which the contract's timestamps allow), rounds fractions to
microseconds and refuses a leap second, so the instant is computed here from the digits:
whole seconds since 1970-01-01T00:00:00Z (negative before, any year from 0000 to 9999, the
offset applied) and the fractional digits as a string without trailing zeros, which compares
as the fraction does ("45" < "5", as 0.45 < 0.5). A leap second (:60) counts as :59 of its
minute, with its fraction: it sorts after every other instant of :59 with a smaller fraction.
"""

import re

_STAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)
DAY = 86400


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The date (year, month, day) of the proleptic Gregorian calendar `days` after 1970-01-01 (the
    inverse of `days_from_civil`, Hinnant's algorithm)."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def instant(timestamp: str) -> tuple[int, str]:
    """(whole seconds since the Unix epoch, fractional digits without trailing zeros)."""
    m = _STAMP.fullmatch(timestamp)
    if m is None:
        raise ValueError(f"not an RFC 3339 timestamp: {timestamp!r}")
    year, month, day, hour, minute, second, fraction, sign, off_h, off_m = m.groups()
    seconds = (
        days_from_civil(int(year), int(month), int(day)) * DAY
        + int(hour) * 3600
        + int(minute) * 60
        + min(int(second), 59)
    )
    if sign is not None:
        offset = int(off_h) * 3600 + int(off_m) * 60
        seconds -= offset if sign == "+" else -offset
    return seconds, (fraction or "").rstrip("0")
