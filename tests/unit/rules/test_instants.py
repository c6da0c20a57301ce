"""Instants of RFC 3339 timestamps by integer arithmetic (`worker.rules.instants`)."""

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from worker.rules.instants import days_from_civil, instant


@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_whole_seconds_agree_with_datetime_wherever_datetime_can_hold_the_date(when: datetime, minutes: int) -> None:
    zone = timezone(timedelta(minutes=minutes))
    aware = when.replace(microsecond=0, tzinfo=zone)
    sign = "+" if minutes >= 0 else "-"
    stamp = f"{aware.year:04d}-{aware:%m-%dT%H:%M:%S}"  # %Y does not pad years before 1000
    text = f"{stamp}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    assert instant(text) == (int((aware - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()), "")


def test_days_from_civil_at_known_dates() -> None:
    assert days_from_civil(1970, 1, 1) == 0
    assert days_from_civil(2000, 3, 1) == 11017
    assert days_from_civil(1969, 12, 31) == -1
    assert days_from_civil(1, 1, 1) == -719162  # datetime(1, 1, 1).toordinal() - 719163
    assert days_from_civil(0, 12, 31) == -719163
    assert days_from_civil(0, 1, 1) == -719163 - 365  # year 0 is a leap year: 366 days


def test_year_0000_sorts_before_year_0001_and_an_offset_can_take_it_before_its_start() -> None:
    assert instant("0000-01-01T00:00:00Z") < instant("0000-12-31T23:59:59Z") < instant("0001-01-01T00:00:00Z")
    assert instant("0000-01-01T00:30:00+01:00") < instant("0000-01-01T00:00:00Z")
    assert instant("0000-02-29T12:00:00Z")[0] - instant("0000-02-28T12:00:00Z")[0] == 86400


def test_every_fractional_digit_counts_and_trailing_zeros_do_not() -> None:
    assert instant("2026-11-29T21:44:51.123456789Z") < instant("2026-11-29T21:44:51.12345679Z")
    assert instant("2026-11-29T21:44:51.5Z") == instant("2026-11-29T21:44:51.500000Z")
    assert instant("2026-11-29T21:44:51.45Z") < instant("2026-11-29T21:44:51.5Z")
    assert instant("2026-11-29T21:44:51Z") < instant("2026-11-29T21:44:51.0000001Z")


def test_a_leap_second_counts_as_second_59_of_its_minute() -> None:
    assert instant("2016-12-31T23:59:60Z") == instant("2016-12-31T23:59:59Z")
    assert instant("2016-12-31T23:59:60.5Z") > instant("2016-12-31T23:59:59.25Z")
    assert instant("2016-12-31T23:59:60.9Z") < instant("2017-01-01T00:00:00Z")


def test_lowercase_separators_and_offsets_are_the_same_instant() -> None:
    assert instant("2026-11-29t21:44:51z") == instant("2026-11-29T21:44:51Z") == instant("2026-11-29T22:44:51+01:00")
    assert instant("2026-11-29T21:44:51Z") == instant("2026-11-29T16:14:51-05:30")
