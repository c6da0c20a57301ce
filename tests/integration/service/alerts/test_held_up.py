"""The alerts of a worker held up, each situation put on the embedded stack and its `/metrics`
recorded beside a healthy neighbour, then `promtool test rules`: the alerts listed must fire,
every other alert (and every alert of the neighbour) must stay silent. Publication denied from
start-up, a publication lease held elsewhere, a worker falling behind, Redis away, Redis that
lost its writes.
"""

import asyncio
import dataclasses

import pytest

from tests.faults.proxy import Proxy, kafka_client_id
from tests.integration.service.alerts.recording import (
    GAMES_PER_SECOND,
    PLAYERS,
    STALL,
    ProduceRefuser,
    check_alerts,
    games,
    healthy_feed,
    held_up,
    published,
    record,
    retried,
    sample,
    seed,
    seeded_worker,
    settled,
    start_recorded_worker,
    troubled,
    wait_until,
)
from tests.support.prometheus import Recording
from tests.support.stack import Stack, require_local
from worker.service.connections import KAFKA_CLIENT_ID

pytestmark = pytest.mark.integration


async def test_publication_denied_from_start_up(stack: Stack, neighbour: Recording) -> None:
    """The broker never sees the worker's produce requests: games wait, none is published. The
    worker's producer connection stops answering too, so it waits for Kafka: not stalled."""
    proxy = ProduceRefuser()
    port = proxy.start()
    try:
        proxied = await asyncio.to_thread(stack.processes.broker, port)
        proxy.upstream_port = proxied.port
        proxy.target = lambda first: kafka_client_id(first) == KAFKA_CLIENT_ID
        stack = dataclasses.replace(stack, broker=proxied)
        await stack.create_topics(games=1, ratings=1)
        seed(stack)  # the import's own publications go through
        proxy.refusing = True
        worker = await start_recorded_worker(stack)
        await stack.produce(games(GAMES_PER_SECOND))
        await settled(lambda: retried(worker, "kafka") > 0, "a retried publication")
        situation = await record(worker, healthy_feed(stack))
    finally:
        proxy.stop()
    assert proxy.refused > 0, "no produce request of the worker reached the proxy"
    assert situation.last("rating_changes_published_total", kind="rated_game", category="blitz") == 0
    check_alerts(
        stack.tmp,
        situation,
        neighbour,
        held_up(troubled("RatingRetrying", "warning", dependency="kafka")),
    )


async def test_a_publication_lease_held_elsewhere(stack: Stack, neighbour: Recording) -> None:
    """Kafka and Redis answer, but another process holds a player's publication lease for long:
    the partition stops committing. Stalled, as /livez sees it, once the longest a rating may wait
    for a lease by design is over (2 x 1.5 + 4 x 1 = 7 s here: worker.service.wiring.longest_wait).
    The other players' ratings go on being published meanwhile (the held one is parked), so the
    alert that no rating comes stays silent: the lag and the stall say it."""
    worker = await seeded_worker(stack, publication_lease_seconds=1.5, producer_delivery_timeout_seconds=1)
    stack.redis_client().set(f"rating:l:{PLAYERS[0]}/blitz", "someone-else", px=600_000)
    await stack.produce(games(len(PLAYERS)))  # one of them has the held player
    # Recorded once the partition is held up (what was published before is not the situation).
    await settled(lambda: sample(worker, "rating_partition_stall_seconds", partition="0") > 0, "the stall")
    before = published(worker)
    situation = await record(worker, healthy_feed(stack))
    assert (situation.last("rating_partition_stall_seconds", partition="0") or 0) > STALL / 2
    assert published(worker) > before, "the other players' ratings were not published meanwhile"
    check_alerts(
        stack.tmp,
        situation,
        neighbour,
        [
            troubled("RatingLagGrowing", "warning"),
            troubled("RatingLagSeconds", "critical"),
            troubled("RatingPartitionStalled", "critical", partition="0"),
        ],
    )


async def test_falling_behind(stack: Stack, neighbour: Recording) -> None:
    """Redis slowed (every chunk of its traffic delayed) and batches of one game: the worker rates
    every game, but fewer a second than arrive. The lag grows, the games wait longer and longer.
    (Before the lag read the broker's end offsets, it read only the highwater of the worker's
    fetches, which stops while fetched records wait: here it shrank while the backlog grew.)"""
    _, redis_server = require_local(stack)
    proxy = Proxy(upstream_port=redis_server.port)
    proxy.start()
    try:
        await stack.create_topics(games=1, ratings=1)
        seed(stack)
        worker = await start_recorded_worker(stack, redis_url=proxy.redis_url, batch_size=1)
        proxy.delay = 0.3  # each way: a game takes seconds
        await stack.produce(games(GAMES_PER_SECOND))
        await settled(lambda: sample(worker, "rating_consumer_lag_records", partition="0") > 0, "lag")
        situation = await record(worker, healthy_feed(stack))
    finally:
        proxy.stop()
    published = situation.series()[("rating_changes_published_total", (("category", "blitz"), ("kind", "rated_game")))]
    assert published[-1][1] > published[0][1], "the worker stopped publishing: not the situation"
    check_alerts(
        stack.tmp,
        situation,
        neighbour,
        [
            troubled("RatingFreshnessBudgetBurn", "critical"),
            troubled("RatingFreshnessBudgetSlowBurn", "warning"),
            troubled("RatingLagGrowing", "warning"),
            troubled("RatingLagSeconds", "critical"),
        ],
    )


async def test_redis_away(stack: Stack, neighbour: Recording) -> None:
    """Redis stops answering after the worker started: it waits, and is not stalled."""
    _, redis_server = require_local(stack)
    proxy = Proxy(upstream_port=redis_server.port)
    proxy.start()
    try:
        await stack.create_topics(games=1, ratings=1)
        seed(stack)
        worker = await start_recorded_worker(stack, redis_url=proxy.redis_url)
        await stack.produce(games(GAMES_PER_SECOND))
        proxy.cut()
        await stack.produce(games(GAMES_PER_SECOND))
        await settled(lambda: retried(worker, "redis") > 0, "a retried Redis call")
        situation = await record(worker, healthy_feed(stack))
    finally:
        proxy.stop()
    check_alerts(
        stack.tmp,
        situation,
        neighbour,
        held_up(troubled("RatingRetrying", "warning", dependency="redis")),
    )


async def test_redis_lost_its_writes(stack: Stack, neighbour: Recording) -> None:
    """Redis comes back empty (a restart without its files): the store is untrusted, work stops."""
    worker = await seeded_worker(stack)
    await stack.produce(games(20))
    await wait_until(lambda: published(worker) > 0, "a first publication")
    stack.redis_client().flushall()
    await stack.produce(games(GAMES_PER_SECOND))
    await settled(lambda: sample(worker, "rating_store_untrusted") == 1, "the store untrusted")
    situation = await record(worker, healthy_feed(stack))
    assert situation.last("rating_store_untrusted") == 1
    check_alerts(
        stack.tmp,
        situation,
        neighbour,
        held_up(
            troubled("RatingRetrying", "warning", dependency="redis"),
            troubled("RatingStoreUntrusted", "critical"),
        ),
    )
