"""tornelo's tournament ends against a real broker (docs/systems/tornelo.md, "Tournament ends"):

- a bad end record is dead-lettered on the deployment's dead-letter topic by the workers' own
  dead-letter producer with exactly the headers a real worker gives a bad game (the same bytes
  and headers on the games topic): key, value, original headers, the five error headers, all
  alike but `source.topic`, which names the tournament topic; a good end is read and parks nothing;
- end records produced by another client (confluent-kafka) in batches compressed with each codec
  are read as any others;
- `replay-dead-letters` puts a tornelo deployment's dead-lettered end back on the tournament
  topic and its bad game on the games topic, each as the record was; an arena deployment sharing
  the dead letters does not take the end (not one of its input topics).

tornelo's commands that touch Kafka are called in-process here: this release's command line
still refuses the system (it is not served yet)."""

import asyncio
import signal
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition

from schemas.tournament_finished import TournamentFinished
from tests.support.batches import produce_compressed
from tests.support.stack import Stack
from worker.embedded.stack import create_topics
from worker.engine.decoder import BadInput, ErrorKind
from worker.operate.replay_dead_letters import REPLAYED_FROM, Selection, destinations, replay_dead_letters
from worker.service.wiring import dead_letters_for, make_producer, start_producer
from worker.settings import WorkerSettings
from worker.stream.dead_letters import DeadLetter, Source
from worker.stream.tournament_ends import decode_end, read_ends

pytestmark = pytest.mark.integration

END = b'{"event_id":"te-1","tournament_id":"T1","finished_at":"2026-11-29T21:44:51Z"}'
BAD = b'{"event_id":"te-2","tournament_id":"T2",'  # cut short: invalid_json, whatever the model
HEADERS = [("trace", b"t-1"), ("error.kind", b"a producer's own"), ("empty", b""), ("trace", b"t-2")]


@dataclass(frozen=True)
class Raw:
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]  # in order, as stored


def tournaments(stack: Stack) -> str:
    return f"tournaments-{stack.name}"


def tornelo(stack: Stack, system: str = "tornelo") -> WorkerSettings:
    """A deployment of `system` on the stack's topics (tornelo: with the stack's tournament topic)."""
    return WorkerSettings(
        system=system,
        kafka_bootstrap_servers=stack.broker.bootstrap,
        redis_url=stack.redis.url,
        topic_games=stack.games_topic,
        topic_ratings=stack.ratings_topic,
        topic_dead_letters=stack.dlq_topic,
        topic_tournaments=tournaments(stack),
        kafka_group_id=stack.group,
        max_message_bytes=4096,
        command_retry_seconds=20,
    )


async def topics(stack: Stack) -> None:
    await create_topics(
        stack.broker.bootstrap,
        {stack.games_topic: 1, stack.ratings_topic: 1, stack.dlq_topic: 1, tournaments(stack): 1},
    )


async def produce(stack: Stack, topic: str, values: list[bytes], headers: list[tuple[str, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, acks="all")
    await producer.start()
    try:
        for value in values:
            await (await producer.send(topic, value, key=b"T1", headers=headers))
    finally:
        await producer.stop()


async def consumed(stack: Stack, topic: str, expect: int, timeout: float = 30) -> list[ConsumerRecord]:
    """The first `expect` records of partition 0 of `topic`, as the client hands them over."""
    consumer = AIOKafkaConsumer(bootstrap_servers=stack.broker.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        records: list[ConsumerRecord] = []
        async with asyncio.timeout(timeout):
            while len(records) < expect:
                for batch in (await consumer.getmany(tp, timeout_ms=500)).values():
                    records += batch
        return records[:expect]
    finally:
        await consumer.stop()


async def raw(stack: Stack, topic: str, expect: int) -> list[Raw]:
    """Every record of partition 0 of `topic`, which holds exactly `expect`."""
    records = [Raw(r.offset, r.key, r.value, list(r.headers)) for r in await consumed(stack, topic, expect)]
    consumer = AIOKafkaConsumer(bootstrap_servers=stack.broker.bootstrap)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        assert (await consumer.end_offsets([tp]))[tp] == expect
    finally:
        await consumer.stop()
    return records


async def test_a_bad_end_gets_exactly_the_dead_letter_of_a_bad_game(stack: Stack) -> None:
    await topics(stack)
    settings = tornelo(stack)
    await produce(stack, stack.games_topic, [BAD], HEADERS)
    await produce(stack, tournaments(stack), [BAD, END], HEADERS)
    worker = stack.start_worker(max_message_bytes=4096)  # the arena's worker: the game's dead letter
    await stack.wait_committed({0: 1})
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0

    producer = make_producer(settings)
    await start_producer(producer, settings)
    try:
        dead_letters = dead_letters_for(producer, settings)
        ends = await read_ends(await consumed(stack, tournaments(stack), 2), dead_letters)  # the bad one parked
    finally:
        await producer.stop()
    assert ends == [TournamentFinished(event_id="te-1", tournament_id="T1", finished_at="2026-11-29T21:44:51Z")]

    game, letter = await raw(stack, stack.dlq_topic, 2)  # the end's parked nothing more
    assert (letter.key, letter.value) == (game.key, game.value) == (b"T1", BAD)
    assert (
        [name for name, _ in letter.headers]
        == [name for name, _ in game.headers]
        == [
            "trace",
            "original.error.kind",
            "empty",
            "trace",
            "error.kind",
            "error.message",
            "source.topic",
            "source.partition",
            "source.offset",
        ]
    )
    differ = [(mine, theirs) for mine, theirs in zip(letter.headers, game.headers, strict=True) if mine != theirs]
    assert differ == [(("source.topic", tournaments(stack).encode()), ("source.topic", stack.games_topic.encode()))]
    errors = dict(letter.headers[4:])
    assert errors["error.kind"] == b"invalid_json"
    assert errors["error.message"].startswith(b"EOF while parsing")
    assert (errors["source.partition"], errors["source.offset"]) == (b"0", b"0")


async def test_ends_compressed_by_another_client_with_each_codec_are_read_as_any(stack: Stack) -> None:
    await topics(stack)
    codecs = ("gzip", "snappy", "lz4", "zstd")
    for n, codec in enumerate(codecs):
        values = [END.replace(b"T1", f"T{n}a".encode()), BAD, END.replace(b"T1", f"T{n}b".encode())]
        await asyncio.to_thread(produce_compressed, stack.broker.bootstrap, tournaments(stack), 0, values, codec)
    read = [decode_end(r, 4096) for r in await consumed(stack, tournaments(stack), 3 * len(codecs))]
    ended = [e.tournament_id for e in read if isinstance(e, TournamentFinished)]
    assert ended == [f"T{n}{x}" for n in range(len(codecs)) for x in "ab"]
    letters = [e for e in read if isinstance(e, DeadLetter)]
    assert [(d.source.offset, d.error.kind) for d in letters] == [(3 * n + 1, "invalid_json") for n in range(4)]


async def test_replay_puts_a_dead_lettered_end_back_on_the_tournament_topic(stack: Stack) -> None:
    await topics(stack)
    settings = tornelo(stack)
    game = b'{"game_id": "g-bad", "rated": "yes"}'
    producer = make_producer(settings)
    await start_producer(producer, settings)
    try:
        await dead_letters_for(producer, settings).send(
            [
                DeadLetter(
                    Source(tournaments(stack), 0, 3, b"T2", BAD, 0, tuple(HEADERS)),
                    BadInput(ErrorKind.INVALID_JSON, "EOF while parsing"),
                ),
                DeadLetter(
                    Source(stack.games_topic, 0, 9, b"g-bad", game, 0, (("trace", b"g"),)),
                    BadInput(ErrorKind.INVALID_SCHEMA, "rated: Input should be a valid boolean"),
                ),
            ],
        )
    finally:
        await producer.stop()

    dry = await replay_dead_letters(settings, Selection(), apply=False)
    assert (dry.read, dict(dry.selected), dry.unrecoverable, dry.replayed) == (
        2,
        {"invalid_json": 1, "invalid_schema": 1},
        [],
        0,
    )
    assert destinations(dry, settings.topic_games) == f"{stack.games_topic} (1), {tournaments(stack)} (1)"
    only_ends = await replay_dead_letters(settings, Selection(kinds=frozenset({"invalid_json"})), apply=False)
    assert destinations(only_ends, settings.topic_games) == tournaments(stack)

    # An arena deployment sharing these dead letters has no tournament topic to put the end back on.
    arena = await replay_dead_letters(tornelo(stack, "arena"), Selection(), apply=False)
    assert arena.unrecoverable == [
        f"{stack.dlq_topic}/0/0: its source topic {tournaments(stack)} is not an input topic of this deployment"
    ]

    applied = await replay_dead_letters(settings, Selection(), apply=True)
    assert applied.replayed == 2
    (end,) = await raw(stack, tournaments(stack), 1)
    assert (end.key, end.value) == (b"T2", BAD)
    assert end.headers == [*HEADERS, (REPLAYED_FROM, f"{stack.dlq_topic}/0/0".encode())]
    (replayed_game,) = await raw(stack, stack.games_topic, 1)
    assert (replayed_game.key, replayed_game.value) == (b"g-bad", game)
    assert replayed_game.headers == [("trace", b"g"), (REPLAYED_FROM, f"{stack.dlq_topic}/0/1".encode())]
