"""tornelo's tournament ends (`RATING_TOPIC_TOURNAMENTS`, docs/systems/tornelo.md, "Tournament
ends"): a record of the topic read as an end, or refused as a bad game is, and parked the same way.

- `decode_end`: the record's value checked by the game input's own decoder
  (`worker.engine.decoder.decode_as`) against the end's model (`schemas.tournament_finished`):
  the same limit (`RATING_MAX_MESSAGE_BYTES`), the same error kinds in the same order
  (`too_large`, `invalid_encoding`, `invalid_json`, `invalid_schema`) with the same one-line
  messages, strict types, unknown fields ignored, a record with no value read as an empty one.
  The key is not read (the tournament id is in the value), nor `finished_at` used: no rule reads
  it. A bad record comes back as its `DeadLetter`: the record's key, value and headers, and why.
- such letters are sent to the deployment's dead-letter topic by the workers' own
  dead-letter producer (`worker.stream.dead_letters.DeadLetters`, made by
  `worker.service.wiring.dead_letters_for`): the original headers, then the five error headers
  (`source.topic` the tournament topic), cut to fit the broker as a game's; counted in the same
  metric, and in the same flood alarm. `replay-dead-letters` puts such a letter back on the
  tournament topic (its `source.topic`).
- `read_ends`: both, for a fetch of records: its good ends, in order, once its bad records' dead
  letters are acknowledged (so that the fetch may be committed once its ends are done).

A record the Kafka client cannot hand over at all (a header key that is not UTF-8, data that
does not decompress) never reaches these functions: the reader of the topic meets it as the
workers do (`worker.stream.unreadable`: what the client can read around it is read, and it is an
`invalid_encoding` dead letter once an operator says so).
"""

from collections.abc import Iterable

from aiokafka import ConsumerRecord

from schemas.tournament_finished import TournamentFinished
from worker.engine.decoder import BadInput, decode_as
from worker.stream.dead_letters import DeadLetter, DeadLetters, Source


def decode_end(record: ConsumerRecord, max_bytes: int) -> TournamentFinished | DeadLetter:
    """The tournament end in `record` (of the tournament topic), or, if it is bad input, its dead
    letter: the game input's error kind and message (`max_bytes`: RATING_MAX_MESSAGE_BYTES)."""
    value: bytes = b"" if record.value is None else record.value
    try:
        return decode_as(TournamentFinished, value, max_bytes)
    except BadInput as bad:
        where = (record.topic, record.partition, record.offset)
        source = Source(*where, record.key, record.value, record.timestamp, tuple(record.headers or ()))
        return DeadLetter(source, bad)


async def read_ends(records: Iterable[ConsumerRecord], dead_letters: DeadLetters) -> list[TournamentFinished]:
    """The ends in `records`, in their order, returned once the bad ones among them are
    dead-lettered and acknowledged. The size limit is the dead letters' own
    (RATING_MAX_MESSAGE_BYTES), as for a game."""
    ends: list[TournamentFinished] = []
    letters: list[DeadLetter] = []
    for record in records:
        end = decode_end(record, dead_letters.max_bytes)
        if isinstance(end, DeadLetter):
            letters.append(end)
        else:
            ends.append(end)
    await dead_letters.send(letters)  # a bad game's headers, acknowledged (retried) before the ends go on
    return ends
