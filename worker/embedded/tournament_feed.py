"""tornelo's traffic on a broker, as the platform publishes it: the games on the games topic, each
tournament's end on the tournament topic (RATING_TOPIC_TOURNAMENTS), what the demo feeds its
workers and its close follower (`rating-worker demo --system tornelo`).

The stream is tornelo's traffic generator's (`TorneloSimulation`: overlapping tournaments, games
outside any, late games, a few bad lines and redeliveries if asked), the very lines `rate` reads.
Its close lines (`{"control":"close","period":T}`) are not published: each becomes an end record
`{"event_id": "end-T", "tournament_id": T, "finished_at": its last game's}` (key T) on the
tournament topic, under the producer's contract of docs/systems/tornelo.md ("Tournament ends";
how the demo keeps it: "The demo"):

- an end is published only once the broker has acknowledged every record of the games topic that
  named its tournament before its close line (its games, and any redelivery or bad copy of one);
  the games go on meanwhile, the end waits for its own tournament's acknowledgements only;
- the ends are published one at a time, each acknowledged before the next is sent, in the order of
  the close lines: the order the tournaments end;
- a close line of a tournament that has ended already (the generator's repeated close, which `rate`
  reads as doing nothing) is dropped: each tournament ends once, and its id is never used again by
  the generator. A tournament still running when the stream stops has no end.

A record that names an ended tournament (a late game) is published as any game: after the end.
"""

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaProducer

from worker.systems.arena.traffic import timestamp


@dataclass(frozen=True)
class PublishedEnd:
    """An end record acknowledged: its tournament, its offset on the tournament topic, the games
    topic's records of the tournament acknowledged before it was sent (partition, offset), and
    when its acknowledgement came (`time.monotonic()`)."""

    tournament_id: str
    offset: int
    games: tuple[tuple[int, int], ...]
    at: float


def close_of(line: bytes) -> str | None:
    """The tournament a close line of `rate`'s input ends, or None for any other line (a bad control
    line such as `"control":"stop"` is a game topic's record: the workers dead-letter it)."""
    if not line.startswith(b'{"control"'):
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    period = value.get("period") if isinstance(value, dict) and value.get("control") == "close" else None
    return period if isinstance(period, str) else None


def tournament_of(line: bytes) -> tuple[str, object] | None:
    """The tournament a record of the games topic names (with its `finished_at`), or None: a game
    outside any, a line that is not a JSON object."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("tournament_id"), str):
        return None
    return value["tournament_id"], value.get("finished_at")


async def paced(lines: Iterable[bytes], rate: float | None) -> AsyncIterator[bytes]:
    """`lines`, `rate` a second on average (as fast as they are taken when None)."""
    interval = 0.0 if rate is None else 1.0 / rate
    next_at = time.monotonic()
    for line in lines:
        yield line
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))


@dataclass
class _Running:
    """A tournament's records published so far, and its last game's `finished_at`."""

    games: list["asyncio.Future[Any]"]
    finished_at: object = None


class TournamentFeed:
    """Publishes a tornelo stream (the module's docstring) through `producer`, which must wait for
    every in-sync replica (`acks="all"`). `sent` is given every game record's future as it is sent;
    `published` every end once acknowledged."""

    def __init__(
        self,
        producer: AIOKafkaProducer,
        games_topic: str,
        ends_topic: str,
        sent: Callable[["asyncio.Future[Any]"], None] = lambda _: None,
        published: Callable[[PublishedEnd], None] = lambda _: None,
    ) -> None:
        self.producer = producer
        self.games_topic = games_topic
        self.ends_topic = ends_topic
        self.sent = sent
        self.published = published
        self._running: dict[str, _Running] = {}
        self._ended: set[str] = set()
        self._ends: asyncio.Queue[tuple[str, _Running] | None] = asyncio.Queue()
        self.started = 0  # tournaments with a record published
        self.ended = 0  # tournaments ended (their close line read), their end published or waiting
        self.ends_published = 0
        self.reclosed = 0  # close lines of ended tournaments, dropped

    async def run(self, lines: Iterable[bytes], rate: float | None = None) -> None:
        """Publish `lines` (`rate` a second, or at once), then wait until every end is acknowledged.
        Cancelled, it stops at once: an end not sent yet is never sent."""
        ends = asyncio.create_task(self._publish_ends())
        try:
            async for line in paced(lines, rate):
                await self.publish(line)
                if ends.done():  # failed: a game of its tournament was not acknowledged
                    break
            self._ends.put_nowait(None)
            await ends
        finally:
            ends.cancel()

    async def publish(self, line: bytes) -> None:
        """One line of the stream: a game topic's record, or a close line queued as an end."""
        closed = close_of(line)
        if closed is not None:
            self._end(closed)
            return
        named = tournament_of(line)
        future: asyncio.Future[Any] = await self.producer.send(self.games_topic, line)
        self.sent(future)
        if named is None or named[0] in self._ended:
            return
        tournament, finished_at = named
        running = self._running.get(tournament)
        if running is None:
            running = self._running[tournament] = _Running([])
            self.started += 1
        running.games.append(future)
        running.finished_at = finished_at

    def running(self) -> int:
        """Tournaments with records published and no close line yet."""
        return len(self._running)

    def _end(self, tournament: str) -> None:
        if tournament in self._ended:
            self.reclosed += 1
            return
        self._ended.add(tournament)
        self.ended += 1
        self._ends.put_nowait((tournament, self._running.pop(tournament, _Running([]))))

    async def _publish_ends(self) -> None:
        """The ends in order, each once its tournament's records are acknowledged, then itself."""
        while (item := await self._ends.get()) is not None:
            tournament, running = item
            acknowledged = await asyncio.gather(*running.games)  # raises if one was not
            finished_at = running.finished_at
            if not isinstance(finished_at, str):  # no game of it (or a bad one) carried a date
                finished_at = timestamp(datetime.now(UTC))
            value = {"event_id": f"end-{tournament}", "tournament_id": tournament, "finished_at": finished_at}
            meta = await self.producer.send_and_wait(
                self.ends_topic, json.dumps(value, separators=(",", ":")).encode(), key=tournament.encode()
            )
            self.ends_published += 1
            games = tuple((m.partition, m.offset) for m in acknowledged)
            self.published(PublishedEnd(tournament, meta.offset, games, time.monotonic()))
