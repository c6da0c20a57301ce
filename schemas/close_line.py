"""Close lines of `rating-worker rate`'s input file, for the per-period systems (contract v2,
"Control messages"): `{"control": "close", "period": P}` closes period P. `control` is exactly the
string `"close"`; `period` is a period of the system (`fide`: a month `YYYY-MM` from `0000-01` to
`9999-11`; `tornelo`: a tournament id); other keys are ignored. Any other object with a `control`
key is `invalid_schema`. In the service closes never come through the input topic."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from schemas.types import Id

# A month YYYY-MM, 0000-01 to 9999-12 (9999-12 is refused by FideCloseLine: no month follows it).
MONTH_PATTERN = r"^[0-9]{4}-(0[1-9]|1[0-2])$"
Month = Annotated[str, StringConstraints(pattern=MONTH_PATTERN)]
LAST_MONTH = "9999-12"


class FideCloseLine(BaseModel):
    """A close of `fide`: every open month up to `period` is closed, oldest first."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", title="close line (fide)")

    control: Literal["close"]
    # The exported schema refuses 9999-12 too (the validator below says why).
    period: Annotated[Month, Field(json_schema_extra={"not": {"const": LAST_MONTH}})]

    @field_validator("period")
    @classmethod
    def _not_the_last_month(cls, value: str) -> str:
        if value == LAST_MONTH:
            raise ValueError("9999-12 cannot be closed: the games after it would have no month to be recorded in")
        return value


class TorneloCloseLine(BaseModel):
    """A close of `tornelo`: the end of the tournament `period`."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", title="close line (tornelo)")

    control: Literal["close"]
    period: Id


CloseLine = FideCloseLine | TorneloCloseLine
