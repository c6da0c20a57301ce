"""What the alert tests share (the tests are in this folder's `test_*.py`, split so that the
parallel test processes run them side by side): the situations' workers and their feeds,
the recordings of their `/metrics`, and `check_alerts`, which runs `promtool test rules` on a
recording beside a healthy neighbour deployment's (`conftest.py`'s `neighbour`, recorded once
per test file).

A recording is a worker's `/metrics` once a second for ten seconds; `tests.support.prometheus`
extends it over two hours at the pace it shows, as the input of one promtool test case.
"""

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from tests.faults.proxy import Proxy
from tests.support import prometheus
from tests.support.games import make_game
from tests.support.prometheus import Recording
from tests.support.stack import Stack
from worker.embedded.stack import free_port

PLAYERS = [f"a{i:02d}" for i in range(40)]
INTERVAL = 15  # seconds between samples of the promtool series: the PodMonitor's interval
HOURS = 2
STEPS = HOURS * 3600 // INTERVAL
SCRAPES = 10  # one a second
GAMES_PER_SECOND = 8
STALL = 8  # RATING_STALL_SECONDS of the recorded workers (longer than the tests' 3 s lease)
TROUBLED = {"namespace": "arena", "job": "rating-worker", "pod": "rating-worker-7d9f-a"}
NEIGHBOUR = {"namespace": "arena", "job": "rating-worker-glicko2", "pod": "rating-worker-glicko2-5c4b-b"}
_ids = itertools.count()


def seed(stack: Stack) -> None:
    path = stack.tmp / "seed.csv"
    rows = [f"{p},blitz,{1500 + 7 * i}.00,40" for i, p in enumerate(PLAYERS)]
    path.write_text("player_id,category,rating,rated_games\n" + "\n".join(rows) + "\n")
    imported = stack.import_seed(path)
    assert imported.returncode == 0, imported.stderr.decode(errors="replace")


def games(n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        i = next(_ids)
        white, black = PLAYERS[i % len(PLAYERS)], PLAYERS[(i * 7 + 1) % len(PLAYERS)]
        if white == black:
            black = PLAYERS[(i + 1) % len(PLAYERS)]
        out.append(
            make_game(f"al{i}", white, black, result=("1-0", "0-1", "1/2-1/2")[i % 3]).model_dump_json().encode()
        )
    return out


async def produce_at(bootstrap: str, topic: str, values: list[bytes], timestamp_ms: int | None) -> None:
    """Values produced with this record timestamp (CreateTime), or the producer's clock."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        sent = [await producer.send(topic, v, timestamp_ms=timestamp_ms) for v in values]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


Feed = Callable[[], Awaitable[None]]


async def record(port: int, feed: Feed | None, scrapes: int = SCRAPES) -> Recording:
    """The worker's /metrics once a second, `feed` run before each scrape."""
    recording = Recording()
    for _ in range(scrapes):
        if feed is not None:
            await feed()
        recording.add(time.monotonic(), await asyncio.to_thread(prometheus.scrape, port))
        await asyncio.sleep(1.0)
    return recording


async def wait_until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


def sample(port: int, name: str, **labels: str) -> float:
    """One series of the worker's /metrics now (0 when it is absent or does not answer)."""
    try:
        text = prometheus.scrape(port)
    except OSError:
        return 0.0
    return prometheus.parse_scrape(text).get((name, tuple(sorted(labels.items()))), 0.0)


def owns_partitions(port: int) -> bool:
    return sample(port, "rating_partitions_assigned") > 0


async def settled(condition: Callable[[], bool], what: str) -> None:
    """Wait for the situation, then a little more: a worker held up on a batch still takes in one
    more fetch (its lag rises, then freezes), and the recording is of the situation itself."""
    await wait_until(condition, what)
    await asyncio.sleep(2.0)


def retried(port: int, dependency: str) -> float:
    text = prometheus.scrape(port)
    return sum(
        value
        for (name, labels), value in prometheus.parse_scrape(text).items()
        if name == "rating_retries_total" and ("dependency", dependency) in labels
    )


async def seeded_worker(stack: Stack, **settings: object) -> int:
    """One partition, the players seeded, a worker holding it; its metrics port."""
    await stack.create_topics(games=1, ratings=1)
    seed(stack)
    return await start_recorded_worker(stack, **settings)


async def start_recorded_worker(stack: Stack, **settings: object) -> int:
    port = free_port()
    stack.start_worker(metrics_port=port, stall_seconds=STALL, **settings)
    await wait_until(lambda: owns_partitions(port), "the worker to hold its partition")
    return port


def healthy_feed(stack: Stack) -> Feed:
    async def feed() -> None:
        await stack.produce(games(GAMES_PER_SECOND))

    return feed


async def record_healthy(stack: Stack) -> Recording:
    return await record(await seeded_worker(stack), healthy_feed(stack))


def firing(alert: str, severity: str, **labels: str) -> dict[str, Any]:
    merged = {"alertname": alert, "alertstate": "firing", "severity": severity, **labels}
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(merged.items()))
    return {"labels": "ALERTS{" + inner + "}", "value": 1}


def troubled(alert: str, severity: str, **labels: str) -> dict[str, Any]:
    return firing(alert, severity, namespace=TROUBLED["namespace"], job=TROUBLED["job"], **labels)


def held_up(*more: dict[str, Any]) -> list[dict[str, Any]]:
    """Games wait and nothing is published: the lag grows, the oldest game ages, no rating comes."""
    return [
        troubled("RatingLagGrowing", "warning"),
        troubled("RatingLagSeconds", "critical"),
        troubled("RatingNoRatingsPublished", "critical"),
        *more,
    ]


def check_alerts(
    tmp: Path,
    situation: Recording,
    neighbour: Recording,
    expected: list[dict[str, Any]],
    *,
    gone_after: int | None = None,
    extra: list[dict[str, Any]] | None = None,
    at: str = f"{HOURS}h",
) -> None:
    """promtool: at `at` (the end of the two hours) exactly `expected` fire; `extra`: more
    expression tests."""
    series = prometheus.input_series(situation, TROUBLED, INTERVAL, STEPS, until=gone_after)
    series += prometheus.input_series(neighbour, NEIGHBOUR, INTERVAL, STEPS)
    case = {
        "interval": f"{INTERVAL}s",
        "input_series": series,
        "promql_expr_test": [
            {"expr": 'ALERTS{alertstate="firing"}', "eval_time": at, "exp_samples": expected},
            *(extra or []),
        ],
    }
    result = prometheus.run_promtool_test(tmp, [case], f"{INTERVAL}s")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


def published(port: int) -> float:
    samples = prometheus.parse_scrape(prometheus.scrape(port))
    return sum(v for (name, _), v in samples.items() if name == "rating_changes_published_total")


@dataclasses.dataclass
class ProduceRefuser(Proxy):
    """A proxy in front of the broker that swallows the worker's produce requests (API key 0)
    and passes everything else: its fetches, commits and metadata still go through."""

    refusing: bool = False
    refused: int = 0

    def forward(self, data: bytes, up: bool) -> bool:
        if self.refusing and up and len(data) >= 6 and data[4:6] == b"\x00\x00":
            self.refused += 1
            return False
        return True
