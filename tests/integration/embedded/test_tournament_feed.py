"""tornelo's traffic on a real broker (`worker.embedded.tournament_feed`), the producer's contract
of docs/systems/tornelo.md: every line of the generator's stream but its close lines on the games
topic; one end record per ended tournament on the tournament topic, in the order they end, each
sent only once the broker had acknowledged every record of the games topic that named its
tournament before it ended; a repeated close dropped; a tournament still running at the end of the
stream not ended.

The producer is a real one whose calls are logged in order (`Recording`): each record's send, and
its acknowledgement as the broker's answer completes its future."""

import asyncio
import itertools
import json
import uuid
from collections import defaultdict
from typing import Any

from aiokafka import AIOKafkaProducer

from schemas.tournament_finished import TournamentFinished
from tests.support.backends import KafkaService
from tests.support.kafka import read_topic
from worker.embedded.stack import create_topics
from worker.embedded.tournament_feed import PublishedEnd, TournamentFeed
from worker.systems.tornelo.traffic import TorneloSimulation

GAMES = 1500


class Recording(AIOKafkaProducer):  # type: ignore[misc]  # aiokafka is untyped
    """A producer logging, in order, each send (`("sent", topic, n)`, n counting the sends) and each
    acknowledgement (`("acked", topic, n)`); `send_and_wait` goes through `send`."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.log: list[tuple[str, str, int]] = []
        self._sends = itertools.count()

    async def send(self, topic: str, *args: Any, **kwargs: Any) -> Any:
        n = next(self._sends)
        self.log.append(("sent", topic, n))
        future = await super().send(topic, *args, **kwargs)

        def acked(f: "asyncio.Future[Any]") -> None:
            if not f.cancelled() and f.exception() is None:
                self.log.append(("acked", topic, n))

        future.add_done_callback(acked)
        return future


def parsed(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


async def test_each_end_is_sent_once_every_game_of_its_tournament_is_acknowledged_in_the_order_they_end(
    broker: KafkaService,
) -> None:
    name = uuid.uuid4().hex[:8]
    games_topic, ends_topic = f"feed-games-{name}", f"feed-ends-{name}"
    await create_topics(broker.bootstrap, {games_topic: 4, ends_topic: 1})
    sim = TorneloSimulation(48, seed=7, tournament_size=8)
    lines = list(sim.game_lines(GAMES, bad_share=0.02, redelivery_share=0.02))

    # What the stream says: its records (all but the close lines), the tournaments in the order they
    # end (the first close of each), and, by tournament, the records naming it before its end.
    records: list[bytes] = []
    closes: list[str] = []
    before: dict[str, list[int]] = defaultdict(list)  # tournament -> indexes in `records`
    late = 0  # records naming a tournament after its end
    named: set[str] = set()
    for line in lines:
        value = parsed(line)
        if value is not None and value.get("control") == "close":
            closes.append(value["period"])
            continue
        tournament = None if value is None else value.get("tournament_id")
        if isinstance(tournament, str):
            named.add(tournament)
            if tournament in closes:
                late += 1
            else:
                before[tournament].append(len(records))
        records.append(line)
    order = list(dict.fromkeys(closes))
    assert len(order) > 20 and len(closes) > len(order) and late > 0  # a few repeated closes, late games
    running = named - set(order)
    assert set(order) <= named and 0 < len(running) <= sim.running_at_most

    producer = Recording(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5)
    await producer.start()
    ends: list[PublishedEnd] = []
    try:
        feed = TournamentFeed(producer, games_topic, ends_topic, published=ends.append)
        await feed.run(lines)
    finally:
        await producer.stop()
    assert (feed.started, feed.ended, feed.ends_published) == (len(named), len(order), len(order))
    assert (feed.running(), feed.reclosed) == (len(running), len(closes) - len(order))

    on_games = await read_topic(broker.bootstrap, games_topic, expect=len(records))
    assert sorted(r.value or b"" for r in on_games) == sorted(records)
    on_ends = sorted(await read_topic(broker.bootstrap, ends_topic, expect=len(order)), key=lambda r: r.offset)
    read = [TournamentFinished.model_validate_json(r.value or b"") for r in on_ends]
    assert [end.tournament_id for end in read] == order  # each once, in the order they ended
    assert [r.key for r in on_ends] == [t.encode() for t in order]
    assert len({end.event_id for end in read}) == len(order)
    assert [(e.tournament_id, e.offset) for e in ends] == [(t, r.offset) for t, r in zip(order, on_ends, strict=True)]

    # The log: the k-th send to the games topic is records[k] (the feed sends them in order).
    game_sends = [n for what, topic, n in producer.log if what == "sent" and topic == games_topic]
    assert len(game_sends) == len(records)
    end_sends = [n for what, topic, n in producer.log if what == "sent" and topic == ends_topic]
    position = {(what, n): i for i, (what, _, n) in enumerate(producer.log)}
    for tournament, sent in zip(order, end_sends, strict=True):
        owed = [game_sends[k] for k in before[tournament]]
        assert owed, tournament
        assert all(position[("acked", n)] < position[("sent", sent)] for n in owed), tournament
    # ...and the feed's own account: the records it awaited are those, as the broker numbered them.
    where = {(r.partition, r.offset): r.value for r in on_games}
    for end in ends:
        assert sorted(where[p] or b"" for p in end.games) == sorted(records[k] for k in before[end.tournament_id])
