"""Each rating system's event contract: how its events are encoded (once, for good) and read
back (`rating-worker restore`). The arena publishes contract v1, whose bytes never change; every
other system publishes contract v2 (`arena.rating.changed.v2.{system}`)."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, cast

from worker.engine.events import Published, RatingEvent, encode, read_v1
from worker.engine.events_periods import encode_fide, encode_tornelo, read_fide, read_tornelo
from worker.engine.events_v2 import encode_cc, encode_glicko2, read_cc, read_glicko2
from worker.rules.interface import RatingSystem, S


@dataclass(frozen=True, slots=True)
class Contract(Generic[S]):
    version: int
    encode: Callable[[RatingEvent[S]], bytes]
    read: Callable[[bytes], Published[S]]


CONTRACTS: dict[str, Contract[Any]] = {
    "arena": Contract(1, encode, read_v1),
    "uscf-cc": Contract(2, encode_cc, read_cc),
    "glicko2": Contract(2, encode_glicko2, read_glicko2),
    "fide": Contract(2, encode_fide, read_fide),
    "tornelo": Contract(2, encode_tornelo, read_tornelo),
}


def contract_of(rules: RatingSystem[S]) -> Contract[S]:
    """The contract of the system whose rules these are."""
    return cast(Contract[S], CONTRACTS[rules.name])
