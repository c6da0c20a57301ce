"""Turn an input message's bytes into a game, or say exactly why it is bad input.

The same checks serve the offline replay and the streaming worker, so a message is
dead-lettered with the same `error.kind` and message whichever of them reads it.
"""

import json
import re
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from schemas.close_line import CloseLine
from schemas.game_finished import GameFinished
from worker.engine.spec import SystemSpec
from worker.rules.interface import RatingSystem

M = TypeVar("M", bound=BaseModel)  # a game's model, or a close line's

MAX_ERRORS_SHOWN = 3  # a message with many bad fields still gets a one-line error
# The JSON parser turns numbers into Python ints, which refuse more than 4300 digits (Python's
# guard against quadratic conversions), and reports such a number as "out of range", as if the
# JSON were malformed. It is valid JSON: such a number is taken for what it is to the schema,
# not an integer any field takes, so the message is `invalid_schema` (or, in an unknown field,
# ignored like the rest of that field).
_OUT_OF_RANGE = "number out of range"
# A JSON string (skipped whole, escapes included) or a number token longer than 4300 characters.
_LONG_NUMBER = re.compile(r'"(?:[^"\\]|\\.)*"|(-?[0-9][0-9.eE+-]{4300,})')


class ErrorKind(StrEnum):
    """The `error.kind` header of a dead letter (contract, "Bad input")."""

    INVALID_ENCODING = "invalid_encoding"
    INVALID_JSON = "invalid_json"
    INVALID_SCHEMA = "invalid_schema"
    CONFLICTING_DUPLICATE = "conflicting_duplicate"
    TOO_LARGE = "too_large"


class BadInput(Exception):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def decode_game(value: bytes, max_bytes: int) -> GameFinished:
    """The game in `value`, or BadInput with the contract's kind and a one-line message."""
    return decode_as(GameFinished, value, max_bytes)


def decode_input(
    rules: RatingSystem[Any], value: bytes, max_bytes: int, record_ms: int | None = None, allowance_seconds: int = 0
) -> GameFinished:
    """A game of `rules`' system: its model's, and then its own checks of what the model cannot
    see (the record's timestamp, `record_ms`, with RATING_FUTURE_ALLOWANCE_SECONDS: the consumer
    and `rebuild` give both; a line of `rate`'s file has neither), or BadInput."""
    game = decode_as(rules.game_model, value, max_bytes)
    why = rules.refuse(game, record_ms, allowance_seconds)
    if why is not None:
        raise BadInput(ErrorKind.INVALID_SCHEMA, why)
    return game


def decode_line(spec: SystemSpec[Any], value: bytes, max_bytes: int) -> GameFinished | CloseLine:
    """A line of `rate`'s input file: a game of `spec`'s system, or, for a per-period system, a
    close line (docs/contract-v2.md, "The per-period systems", "Close lines": a JSON object with a
    `control` key is never a game; it is a close when `control` is exactly "close" and `period` is a period of the
    system, other keys ignored, and `invalid_schema` otherwise), or BadInput."""
    try:
        return decode_input(spec.rules, value, max_bytes)  # a line has no record timestamp
    except BadInput as bad:
        if bad.kind is not ErrorKind.INVALID_SCHEMA or spec.periods is None:
            raise
        if not _has_control_key(value):
            raise
    return decode_as(spec.periods.close_line, value, max_bytes)


def _has_control_key(value: bytes) -> bool:
    """Whether a valid JSON text (as the model found it) is an object with a `control` key; a
    number longer than Python's ints take is read as a string of its length, as `decode_as` does."""
    text = value.decode("utf-8")
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = json.loads(_LONG_NUMBER.sub(_as_string, text))
        except ValueError:
            return False
    return isinstance(data, dict) and "control" in data


def decode_as(model: type[M], value: bytes, max_bytes: int) -> M:
    """The game in `value` as `model` (a system's input: v1's, or v1 with a system's fields), or
    BadInput with the contract's kind and a one-line message."""
    if len(value) > max_bytes:
        raise BadInput(ErrorKind.TOO_LARGE, f"value is {len(value)} bytes, the maximum is {max_bytes}")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(ErrorKind.INVALID_ENCODING, f"not UTF-8: byte {e.start} ({value[e.start]:#04x})") from None
    try:
        return model.model_validate_json(text)
    except ValidationError as e:
        if not _out_of_range(e):
            raise _classify(e) from None
    try:  # the same text with each over-long number as a string of the same length
        return model.model_validate_json(_LONG_NUMBER.sub(_as_string, text))
    except ValidationError as e:
        raise _classify(e) from None


def _out_of_range(error: ValidationError) -> bool:
    first = error.errors(include_url=False, include_input=False)[0]
    return first["type"] == "json_invalid" and _OUT_OF_RANGE in str(first["msg"])


def _as_string(match: "re.Match[str]") -> str:
    number = match.group(1)
    # Same length, so that a later error's line and column are those of the original text.
    return match.group(0) if number is None else '"' + "0" * (len(number) - 2) + '"'


def _classify(error: ValidationError) -> BadInput:
    errors = error.errors(include_url=False, include_input=False)
    if errors and errors[0]["type"] == "json_invalid":
        return BadInput(ErrorKind.INVALID_JSON, str(errors[0]["msg"]).removeprefix("Invalid JSON: "))
    parts = []
    for e in errors[:MAX_ERRORS_SHOWN]:
        where = ".".join(str(p) for p in e["loc"]) or "value"
        parts.append(f"{where}: {e['msg']}")
    if len(errors) > MAX_ERRORS_SHOWN:
        parts.append(f"and {len(errors) - MAX_ERRORS_SHOWN} more")
    return BadInput(ErrorKind.INVALID_SCHEMA, "; ".join(parts))
