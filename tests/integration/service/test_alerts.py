"""The alerts, checked by the real tools on what real workers export.

- `promtool check rules` on the PrometheusRule's groups, `promtool check metrics` on a scrape.
- `promtool test rules`: for each situation an alert names, a worker is put in it on the
  embedded stack (publication denied from start-up, Redis away, bad input, late games, Redis
  losing its writes, the group's offsets lost) and its `/metrics` recorded for ten seconds;
  the recording, extended over two hours at the pace it shows (`tests.support.prometheus`), is
  the input of one test case, beside a healthy neighbour deployment recorded the same way. The
  alerts that must fire for the troubled deployment are listed per situation; every other
  alert, and every alert of the neighbour, must stay silent (`ALERTS` compared as a whole).
- A real prometheus server scrapes two workers with the project's rules: after a rebalance in
  which the old owner had lag, the summed lag equals the true lag; killing every worker makes
  the absence alert pending, killing one of two does not.
"""

import asyncio
import dataclasses
import itertools
import json
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiokafka import AIOKafkaProducer

from tests.faults.proxy import Proxy, kafka_client_id
from tests.support import prometheus
from tests.support.backends import KafkaService
from tests.support.batches import NOT_UTF8, RawRecord, produce_raw_batch
from tests.support.games import make_game
from tests.support.kafka import committed
from tests.support.processes import Processes
from tests.support.prometheus import PrometheusServer, Recording
from tests.support.stack import Stack, require_local
from worker.embedded.stack import free_port
from worker.service.connections import KAFKA_CLIENT_ID

pytestmark = pytest.mark.integration

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


# Recorded once for the module, on a loop of the module's own (the recording is plain data).
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def neighbour(broker: KafkaService, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Recording]:
    """A healthy deployment's recording: steady valid games, every one rated."""
    owned = Processes("the healthy neighbour of test_alerts")
    tmp = tmp_path_factory.mktemp("neighbour")
    stack = Stack(broker, owned.redis(tmp / "redis"), tmp, "neighbour", owned)
    try:
        recording = await record_healthy(stack)
        assert (recording.last("rating_changes_published_total", kind="rated_game", category="blitz") or 0) > 0
        yield recording
    finally:
        stack.close()
        owned.kill_all()


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


def test_promtool_accepts_the_rules(tmp_path: Path) -> None:
    rules = prometheus.write_rule_file(tmp_path)
    result = subprocess.run(
        [prometheus.tool("promtool"), "check", "rules", str(rules)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


async def test_promtool_check_metrics_accepts_a_real_scrape(stack: Stack) -> None:
    port = await seeded_worker(stack)
    await stack.produce(games(20))
    text = await asyncio.to_thread(prometheus.scrape, port)
    result = subprocess.run(
        [prometheus.tool("promtool"), "check", "metrics"],
        input=text,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Every labelled series an alert reads is there from start-up, at 0 if nothing happened yet.
    samples = prometheus.parse_scrape(text)
    for kind in ("invalid_json", "conflicting_duplicate"):
        assert samples[("rating_dead_letters_total", (("kind", kind),))] == 0.0
    assert samples[("rating_changes_published_total", (("category", "bullet"), ("kind", "rating_lost")))] == 0.0
    assert samples[("rating_retries_total", (("dependency", "redis"), ("operation", "redis_apply")))] == 0.0
    assert samples[("rating_stall_threshold_seconds", ())] == STALL


async def test_healthy_workers_raise_no_alert(stack: Stack, neighbour: Recording) -> None:
    situation = await record_healthy(stack)
    freshness = [
        {
            "expr": f"rating:freshness_errors:ratio_rate{window}",
            "eval_time": f"{HOURS}h",
            "exp_samples": [
                {"labels": f'rating:freshness_errors:ratio_rate{window}{{job="{job}",namespace="arena"}}', "value": 0}
                for job in (NEIGHBOUR["job"], TROUBLED["job"])
            ],
        }
        for window in ("5m", "30m", "1h", "6h", "3d")
    ]
    objective = {
        "expr": "rating:freshness_objective:ratio",
        "eval_time": "1m",
        "exp_samples": [{"labels": "rating:freshness_objective:ratio", "value": 0.999}],
    }
    check_alerts(stack.tmp, situation, neighbour, [], extra=[*freshness, objective])


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


async def test_bad_input_is_dead_lettered(stack: Stack, neighbour: Recording) -> None:
    worker = await seeded_worker(stack)

    async def feed() -> None:
        await stack.produce([b"{not json", json.dumps({"game_id": 1}).encode()] * 3 + games(2))

    situation = await record(worker, feed)
    check_alerts(stack.tmp, situation, neighbour, [troubled("RatingDeadLetterRate", "warning")])


async def test_a_record_the_client_cannot_read(stack: Stack, neighbour: Recording) -> None:
    """A header key that is not UTF-8 after three games: the partition is paused at it (the games
    before it rated), the games behind it wait; the pause is its own alert, not a stall."""
    worker = await seeded_worker(stack)
    await stack.produce(games(3))
    bad = RawRecord(games(1)[0], None, [(NOT_UTF8, b"v")])
    await produce_raw_batch(stack.broker.bootstrap, stack.games_topic, 0, [bad])
    await settled(lambda: sample(worker, "rating_partition_paused_at_offset", partition="0") == 3, "the pause")
    situation = await record(worker, healthy_feed(stack))
    assert situation.last("rating_partition_paused_at_offset", partition="0") == 3
    check_alerts(stack.tmp, situation, neighbour, held_up(troubled("RatingInputUnreadable", "critical", partition="0")))


async def test_late_games_burn_the_freshness_budget(stack: Stack, neighbour: Recording) -> None:
    """Every game's record is a minute old when the worker sees it: every change is late."""
    worker = await seeded_worker(stack)

    async def feed() -> None:
        await produce_at(
            stack.broker.bootstrap, stack.games_topic, games(GAMES_PER_SECOND), int(time.time() * 1000) - 60_000
        )

    situation = await record(worker, feed)
    assert (situation.last("rating_end_to_end_seconds_count") or 0) > 0
    freshness = {
        "expr": "rating:freshness_errors:ratio_rate1h",
        "eval_time": f"{HOURS}h",
        "exp_samples": [
            {"labels": f'rating:freshness_errors:ratio_rate1h{{job="{job}",namespace="arena"}}', "value": value}
            for job, value in ((NEIGHBOUR["job"], 0), (TROUBLED["job"], 1))
        ],
    }
    check_alerts(
        stack.tmp,
        situation,
        neighbour,
        [troubled("RatingFreshnessBudgetBurn", "critical"), troubled("RatingFreshnessBudgetSlowBurn", "warning")],
        extra=[freshness],
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


def published(port: int) -> float:
    samples = prometheus.parse_scrape(prometheus.scrape(port))
    return sum(v for (name, _), v in samples.items() if name == "rating_changes_published_total")


async def test_the_group_lost_its_offsets(stack: Stack, neighbour: Recording) -> None:
    """A worker of a renamed group finds no committed offset but the watermark: it starts there."""
    first = await seeded_worker(stack)
    await stack.produce(games(30))
    end = await stack.games_ends(30, idle=0.3)
    await stack.wait_committed(end)
    assert published(first) > 0
    stack.workers[0].send_signal(signal.SIGTERM)
    stack.workers[0].wait(timeout=30)
    renamed = await start_recorded_worker(stack, kafka_group_id=f"{stack.group}-renamed")
    situation = await record(renamed, healthy_feed(stack))
    assert situation.last("rating_partitions_started_at_watermark_total") == 1
    # Its counter's first sample is already 1 (the assignment comes before the first scrape):
    # the alert fires from the start, and ends 15 minutes on.
    rewound = [troubled("RatingGroupRewound", "warning")]
    check_alerts(stack.tmp, situation, neighbour, rewound, at="1m")
    check_alerts(stack.tmp, situation, neighbour, rewound, at="14m")
    check_alerts(stack.tmp, situation, neighbour, [], at="16m")


async def test_every_worker_gone_and_one_of_two_gone(stack: Stack, neighbour: Recording) -> None:
    """The healthy recording stops an hour and a half in: absent. Two pods, one gone: not absent."""
    situation = await record_healthy(stack)
    gone = (HOURS * 3600 - 1800) // INTERVAL
    check_alerts(stack.tmp, situation, neighbour, [troubled("RatingWorkerAbsent", "critical")], gone_after=gone)
    # The same worker as two pods, one of which goes: the deployment is still there.
    series = prometheus.input_series(situation, TROUBLED, INTERVAL, STEPS, until=gone)
    series += prometheus.input_series(situation, {**TROUBLED, "pod": "rating-worker-7d9f-b"}, INTERVAL, STEPS)
    case = {
        "interval": f"{INTERVAL}s",
        "input_series": series,
        "promql_expr_test": [{"expr": 'ALERTS{alertstate="firing"}', "eval_time": f"{HOURS}h", "exp_samples": []}],
    }
    result = prometheus.run_promtool_test(stack.tmp, [case], f"{INTERVAL}s")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


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


# A real Prometheus server.


def lag_by_pod(server: PrometheusServer) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for sample in server.query("rating_consumer_lag_records"):
        out.setdefault(sample["metric"]["pod"], set()).add(sample["metric"]["partition"])
    return out


async def test_a_real_prometheus_sums_the_true_lag_and_sees_the_workers_go(stack: Stack) -> None:
    partitions = 12
    await stack.create_topics(games=partitions, ratings=2)
    seed(stack)
    ports = [free_port(), free_port()]
    server = PrometheusServer(stack.tmp / "prometheus", free_port())
    server.directory.mkdir()
    config = server.config({"rating-worker": ports}, {"namespace": "arena"})
    with (stack.tmp / "prometheus.log").open("ab") as log:
        stack.processes.popen(
            "prometheus",
            [
                prometheus.tool("prometheus"),
                f"--config.file={config}",
                f"--storage.tsdb.path={server.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{server.port}",
                "--storage.tsdb.retention.time=1h",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    # The first worker alone, held up: another process holds a player's publication lease, so
    # every partition with one of its games stops committing, and the first worker has lag.
    lease = f"rating:l:{PLAYERS[0]}/blitz"
    stack.redis_client().set(lease, "someone-else", px=600_000)
    first = stack.start_worker(metrics_port=ports[0])
    await wait_until(lambda: owns_partitions(ports[0]), "the first worker to hold the partitions")
    ends: dict[int, int] = {}
    await produce_acknowledged(stack, games(2000), ends)
    await wait_until(lambda: any_lag(server, ports[0]), "Prometheus to see the first worker's lag", timeout=60)
    stack.start_worker(metrics_port=ports[1])
    await wait_until(lambda: owns_partitions(ports[1]), "the second worker to hold partitions", timeout=60)
    stack.redis_client().delete(lease)  # the holder goes away: everything drains
    await stack.wait_committed(ends, timeout=120)
    await asyncio.sleep(3)  # a quiet point: a few scrapes after the last commit
    owned = lag_by_pod(server)
    assert set(owned) == {f"127.0.0.1:{p}" for p in ports}, owned
    first_owns, second_owns = owned[f"127.0.0.1:{ports[0]}"], owned[f"127.0.0.1:{ports[1]}"]
    assert not first_owns & second_owns, "a partition reported by both workers"
    assert first_owns | second_owns == {str(p) for p in range(partitions)}
    done = await committed(stack.broker.bootstrap, stack.group, stack.games_topic, partitions)
    true_lag = sum(ends.get(p, 0) - done.get(p, 0) for p in range(partitions))
    (summed,) = server.query('sum(rating_consumer_lag_records{job="rating-worker"})')
    assert float(summed["value"][1]) == true_lag
    # The first worker's lag before the rebalance was seen, on partitions it no longer reports.
    (before,) = server.query(f'sum(max_over_time(rating_consumer_lag_records{{pod="127.0.0.1:{ports[0]}"}}[5m]))')
    assert float(before["value"][1]) > 0
    # One of two killed: the deployment is there. Both killed: the absence alert is pending.
    first.kill()
    first.wait()
    await asyncio.sleep(4)
    assert not [a for a in server.alerts() if a["labels"]["alertname"] == "RatingWorkerAbsent"]
    stack.workers[1].kill()
    stack.workers[1].wait()
    await wait_until(lambda: absent_alert(server) in ("pending", "firing"), "the absence alert", timeout=30)
    (alert,) = [a for a in server.alerts() if a["labels"]["alertname"] == "RatingWorkerAbsent"]
    assert alert["labels"]["job"] == "rating-worker" and alert["labels"]["namespace"] == "arena"


def any_lag(server: PrometheusServer, port: int) -> bool:
    try:
        result = server.query(f'sum(rating_consumer_lag_records{{pod="127.0.0.1:{port}"}})')
    except OSError:
        return False
    return bool(result) and float(result[0]["value"][1]) > 0


def absent_alert(server: PrometheusServer) -> str | None:
    states = [a["state"] for a in server.alerts() if a["labels"]["alertname"] == "RatingWorkerAbsent"]
    return states[0] if states else None


async def produce_acknowledged(stack: Stack, values: list[bytes], ends: dict[int, int]) -> None:
    """Produce keyed games; `ends` gets each partition's end from the acknowledgements (offset + 1)."""
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        sent = [await producer.send(stack.games_topic, v, key=json.loads(v)["game_id"].encode()) for v in values]
        for metadata in await asyncio.gather(*sent):
            ends[metadata.partition] = max(ends.get(metadata.partition, 0), metadata.offset + 1)
    finally:
        await producer.stop()
