"""The alerts, checked by the real tools on what real workers export: `promtool check rules` on
the PrometheusRule's groups, `promtool check metrics` on a scrape; `promtool test rules` on a
healthy worker's recording (no alert) and on one that stops (absent; one pod of two gone: not);
and a real prometheus server scraping two workers with the project's rules: after a rebalance
in which the old owner had lag, the summed lag equals the true lag; killing every worker makes
the absence alert pending, killing one of two does not.
"""

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from tests.integration.service.alerts.recording import (
    HOURS,
    INTERVAL,
    NEIGHBOUR,
    PLAYERS,
    STALL,
    STEPS,
    TROUBLED,
    check_alerts,
    games,
    owns_partitions,
    record_healthy,
    seed,
    seeded_worker,
    troubled,
    wait_until,
)
from tests.support import prometheus
from tests.support.kafka import committed
from tests.support.prometheus import PrometheusServer, Recording
from tests.support.stack import Stack
from worker.embedded.stack import free_port

pytestmark = pytest.mark.integration


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
