"""Turn an input message's bytes into a game, or say exactly why it is bad input.

The same checks serve the offline replay and the streaming worker, so a message is
dead-lettered with the same `error.kind` and message whichever of them reads it.
"""

from enum import StrEnum

from pydantic import ValidationError

from schemas.game_finished import GameFinished

MAX_ERRORS_SHOWN = 3  # a message with many bad fields still gets a one-line error


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
    if len(value) > max_bytes:
        raise BadInput(ErrorKind.TOO_LARGE, f"value is {len(value)} bytes, the maximum is {max_bytes}")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(ErrorKind.INVALID_ENCODING, f"not UTF-8: byte {e.start} ({value[e.start]:#04x})") from None
    try:
        return GameFinished.model_validate_json(text)
    except ValidationError as e:
        raise _classify(e) from None


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
