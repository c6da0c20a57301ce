"""Field types shared by the messages of the contract."""

import re
from calendar import monthrange
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints, WithJsonSchema

# An id (game or player): ASCII, no separators, so keys built from ids cannot collide.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]

CategoryName = Literal["rapid", "blitz", "bullet"]

# re.ASCII: \d is [0-9] only, as RFC 3339 requires (str patterns match any Unicode digit).
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)


def check_rfc3339(value: str) -> str:
    """Accept an RFC 3339 date-time with `Z` or a `+hh:mm` offset; return it unchanged.

    Kept as the string it came in (the output copies it verbatim). A leap second (:60) is
    accepted, as RFC 3339 allows it; so are a lowercase `t`/`z`, which RFC 3339 also allows.
    """
    m = _RFC3339.fullmatch(value)
    if m is None:
        raise ValueError("must be an RFC 3339 timestamp with Z or a +hh:mm offset, e.g. 2026-11-29T21:44:51Z")
    year, month, day, hour, minute, second, sign, off_h, off_m = m.groups()
    if not ("01" <= month <= "12" and "01" <= day <= "31") or (
        day > "28" and int(day) > monthrange(int(year), int(month))[1]
    ):
        raise ValueError("has no such calendar date")
    if hour > "23" or minute > "59" or second > "60":  # two digits each: string order is numeric order
        raise ValueError("has no such time of day")
    if sign is not None and (off_h > "23" or off_m > "59"):
        raise ValueError("has an impossible UTC offset")
    return value


Timestamp = Annotated[
    str,
    AfterValidator(check_rfc3339),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]

# A number with at most two decimals (ratings, changes, probabilities), exact as Decimal. The
# JSON Schema says so in words, not with `multipleOf` 0.01: a validator that reads numbers as
# binary floats (most do) refuses most valid values then (1052.13 is no float multiple of 0.01).
TwoDecimals = Annotated[
    Decimal,
    Field(decimal_places=2),
    WithJsonSchema({"type": "number", "description": "at most two decimals"}),
]
