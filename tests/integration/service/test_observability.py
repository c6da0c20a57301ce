"""What an operator sees: /metrics after a known stream, /readyz and /livez, and the logs."""

import asyncio
import json
import re
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis

from tests.support.processes import Processes
from tests.support.stack import Stack
from worker.embedded.stack import free_port
from worker.service.memory_trace import compare, parse_name
from worker.store import keys

pytestmark = pytest.mark.integration

PLAYERS = [f"m{i:02d}" for i in range(20)]


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def sample_value(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text format (0 when absent), `system` aside:
    every series carries the deployment's, here the arena's."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted({**labels, "system": "arena"}.items()))
    for line in text.splitlines():
        m = re.fullmatch(r"([a-z_]+)(?:\{(.*)\})? (\S+)", line)
        if m and m.group(1) == name:
            got = ",".join(sorted((m.group(2) or "").split(","))) if m.group(2) else ""
            if got == wanted:
                return float(m.group(3))
    return 0.0


def game(n: int, white: str, black: str, **extra: object) -> bytes:
    value: dict[str, object] = {
        "event_id": f"e{n}",
        "game_id": f"op{n}",
        "finished_at": "2026-11-29T10:00:00Z",
        "rated": True,
        "time_control": {"base_seconds": 300, "increment_seconds": 0},  # 5+0: blitz
        "white_id": white,
        "black_id": black,
        "result": "1/2-1/2",
        "termination": "draw_agreement",
    }
    value.update(extra)
    return json.dumps(value).encode()


def seed_file(tmp: Path) -> Path:
    path = tmp / "seed.csv"
    rows = [f"{p},blitz,{1500 + 10 * i}.00,50" for i, p in enumerate(PLAYERS)]
    path.write_text("player_id,category,rating,rated_games\n" + "\n".join(rows) + "\n")
    return path


async def test_metrics_count_what_happened_to_a_known_stream(stack: Stack) -> None:
    await stack.create_topics(games=2, ratings=2)
    assert stack.import_seed(seed_file(stack.tmp)).returncode == 0
    values: list[bytes] = []
    rated = [game(i, PLAYERS[i % 20], PLAYERS[(i + 1) % 20]) for i in range(30)]  # 30 rated, 60 changes
    values += rated
    values += [game(100 + i, "m01", "m02", rated=False) for i in range(4)]
    values += [game(200 + i, "m01", "m02", termination="forfeit") for i in range(3)]
    values += [game(300 + i, "m01", "m02", termination="aborted") for i in range(2)]
    values += [
        game(400 + i, "m01", "m02", time_control={"base_seconds": 420, "increment_seconds": 0}) for i in range(5)
    ]
    values += [game(500 + i, f"new{i}", f"newer{i}") for i in range(2)]  # both unrated
    values += [game(600, "rookie", "m03", result="0-1")]  # a loss before the count starts
    values += rated[:6]  # redelivered: duplicates
    values += [b"\xff", b"{", b"{}", game(0, PLAYERS[0], PLAYERS[1], result="1-0")]  # 3 bad + 1 conflict
    port = free_port()
    stack.start_worker(metrics_port=port)
    # Keyed by game id: the copies of a game stay in its partition, after their original.
    await stack.produce(values, [_game_key(v) for v in values])
    end = await stack.games_ends(len(values), idle=0.3)
    await stack.wait_committed(end)
    status, text = get(port, "/metrics")
    assert status == 200
    assert sample_value(text, "rating_games_consumed_total") == len(values)
    assert sample_value(text, "rating_games_rated_total") == 30
    expected_skips = {
        "rated_false": 4,
        "forfeit": 3,
        "aborted": 2,
        "unrated_time_control": 5,
        "both_unrated": 2,
        "not_counted": 1,
        "duplicate": 6,
    }
    for reason, n in expected_skips.items():
        assert sample_value(text, "rating_games_skipped_total", reason=reason) == n, reason
    for kind, n in {"invalid_encoding": 1, "invalid_json": 1, "invalid_schema": 1, "conflicting_duplicate": 1}.items():
        assert sample_value(text, "rating_dead_letters_total", kind=kind) == n, kind
    assert sample_value(text, "rating_changes_published_total", kind="rated_game", category="blitz") == 60
    assert sample_value(text, "rating_events_sent_total") >= 60
    assert sample_value(text, "rating_end_to_end_seconds_count") == 30
    assert sample_value(text, "rating_partitions_assigned") == 2
    # The lag is a sample taken every second (worker.stream.consumer.LAG_INTERVAL): the one after
    # the last commit says 0.
    deadline = time.monotonic() + 5
    while sample_value(text, "rating_consumer_lag_records", partition="0") != 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        text = get(port, "/metrics")[1]
    assert sample_value(text, "rating_consumer_lag_records", partition="0") == 0
    assert sample_value(text, "rating_last_commit_timestamp_seconds", partition="0") > time.time() - 60
    assert sample_value(text, "rating_redis_seconds_count", operation="apply") >= 1
    assert 'rating_build_info{python="' in text


def _game_key(value: bytes) -> bytes:
    try:
        return str(json.loads(value)["game_id"]).encode()
    except (ValueError, KeyError, TypeError):
        return b"bad"


async def test_ready_only_after_assignment_and_live_fails_on_a_stalled_partition_then_recovers(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=1)
    assert stack.import_seed(seed_file(stack.tmp)).returncode == 0
    port = free_port()
    # A lease and a delivery timeout short enough that the longest a rating may wait for another
    # process's lease by design (2 x 1.5 + 4 x 1 = 7 s: worker.service.wiring.longest_wait) is soon over.
    worker = stack.start_worker(
        metrics_port=port, stall_seconds=4, publication_lease_seconds=1.5, producer_delivery_timeout_seconds=1
    )
    # Ready only once partitions are assigned: every answer before the first 200 is a 503.
    answers = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, body = get(port, "/readyz")
        if status:
            answers.append((status, body.strip()))
        if status == 200:
            break
        await asyncio.sleep(0.05)
    assert answers and answers[-1][0] == 200, (answers, stack.logs()[-2000:])
    assert any(s == 503 for s, _ in answers), "never seen unready before the assignment"
    assert all(s == 503 for s, _ in answers[:-1])
    assert get(port, "/livez")[0] == 200
    # A stall with Kafka and Redis up: another process holds m05's publication lease for long
    # (longer than any lease may last), so the worker cannot publish m05's change and its
    # partition stops committing: a stall once the longest wait by design (7 s) is over.
    r = stack.redis_client()
    r.set("rating:l:m05/blitz", "someone-else", px=600_000)
    await stack.produce([game(1, "m05", "m06")] + [game(i, "m07", "m08") for i in range(2, 10)])
    await asyncio.sleep(1.0)
    stalled_at = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status, body = get(port, "/livez")
        if status == 503:
            stalled_at = body
            break
        await asyncio.sleep(0.25)
    assert stalled_at is not None and "no progress" in stalled_at, stack.logs()[-2000:]
    assert get(port, "/readyz")[0] == 200  # the dependencies answer: ready, not live
    r.delete("rating:l:m05/blitz")  # the holder goes away: the worker flushes and commits
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and get(port, "/livez")[0] != 200:
        await asyncio.sleep(0.25)
    assert get(port, "/livez")[0] == 200
    assert worker.poll() is None


async def wait_ready(port: int, timeout: float = 30.0) -> str:
    """/readyz's body once it answers 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = get(port, "/readyz")
        if status == 200:
            return body.strip()
        await asyncio.sleep(0.1)
    raise AssertionError(f"/readyz on {port} not 200 within {timeout} s: {get(port, '/readyz')}")


async def test_a_member_holding_no_partition_is_ready_so_a_rollout_can_surge(stack: Stack) -> None:
    """One partition, two workers (as a surge pod beside 12 replicas on 12 partitions): the one
    that holds nothing is ready too, and exactly one holds the partition."""
    await stack.create_topics(games=1, ratings=1)
    ports = [free_port(), free_port()]
    stack.start_worker(metrics_port=ports[0])
    first = await wait_ready(ports[0])
    assert first == "ready: 1 partition"
    stack.start_worker(metrics_port=ports[1])
    second = await wait_ready(ports[1], timeout=60)
    # The rebalance may give the partition to either; after it, one holds it, one holds none.
    deadline = time.monotonic() + 30
    bodies: list[str] = []
    while time.monotonic() < deadline:
        bodies = sorted(get(port, "/readyz")[1].strip() for port in ports)
        if bodies == sorted(["ready: 1 partition", NO_PARTITION]):
            break
        await asyncio.sleep(0.2)
    assert bodies == sorted(["ready: 1 partition", NO_PARTITION]), (second, bodies)


NO_PARTITION = "ready: a member of the group holding no partition (more members than partitions)"


async def test_no_secret_is_ever_logged(stack: Stack, tmp_path: Path, processes: Processes) -> None:
    secret = "s3cr3t-pa55word"
    guarded = processes.redis(tmp_path / "guarded")
    with redis.Redis.from_url(guarded.url) as admin:
        admin.config_set("requirepass", secret)
    await stack.create_topics(games=1, ratings=1)
    url = f"redis://:{secret}@127.0.0.1:{guarded.port}/0"
    seed = seed_file(stack.tmp)
    imported = stack.import_seed(seed, redis_url=url, log_level="debug")
    assert imported.returncode == 0, imported.stderr
    worker = stack.start_worker(redis_url=url, log_level="debug")
    await stack.produce([game(i, "m01", "m02") for i in range(20)])
    await stack.wait_committed({0: 20})
    guarded.kill()  # an outage: connection errors get logged, with where they went
    await stack.produce([game(i, "m01", "m02") for i in range(20, 30)])
    await asyncio.sleep(4)
    worker.kill()
    logs = stack.logs() + imported.stderr.decode()
    assert "retry" in logs  # the outage was logged...
    assert secret not in logs  # ...without the password


@pytest.mark.timeout(90)
async def test_the_tracemalloc_mode_writes_a_snapshot_per_sigusr2_named_with_the_games_consumed(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    sim = stack.seeded_simulation(40, seed=11)
    lines = list(sim.game_lines(300, 0.0, 0.0))
    await stack.produce(lines)
    worker = stack.start_worker(tracemalloc_frames=1, tracemalloc_dir=str(stack.tmp))
    await stack.wait_committed({0: len(lines)})
    for _ in range(2):
        worker.send_signal(signal.SIGUSR2)
        await asyncio.sleep(1.0)
    deadline = time.monotonic() + 30
    while len(snaps := sorted(stack.tmp.glob(f"tracemalloc-{worker.pid}-*.snap"))) < 2:
        assert time.monotonic() < deadline, f"snapshots: {snaps}\n{stack.logs_tail()}"
        await asyncio.sleep(0.2)
    assert [parse_name(p.name) for p in snaps] == [(worker.pid, 0, len(lines)), (worker.pid, 1, len(lines))]
    games, totals, sites = compare([*snaps, snaps[-1]])
    assert games == [len(lines)] * 3 and totals[0] > 0 and sites
    assert worker.poll() is None  # a snapshot does not stop the worker


async def test_a_parked_rating_counts_as_published_once_acknowledged(stack: Stack) -> None:
    """Another process holds one player's publication lease: her change is parked, the rest are
    published. The published changes and the end-to-end times count what Kafka acknowledged:
    hers (and her game's time) once the lease is gone and her event is out, not before."""
    await stack.create_topics(games=1, ratings=1)
    assert stack.import_seed(seed_file(stack.tmp)).returncode == 0
    lease = keys.lease_key("rating:", f"{PLAYERS[0]}/blitz")
    stack.redis_client().set(lease, "someone-else", px=600_000)
    port = free_port()
    stack.start_worker(metrics_port=port)
    values = [game(i, PLAYERS[i], PLAYERS[i + 10]) for i in range(10)]  # PLAYERS[0] in the first only
    await stack.produce(values)

    def counts() -> tuple[float, float]:
        text = get(port, "/metrics")[1]
        published = sample_value(text, "rating_changes_published_total", kind="rated_game", category="blitz")
        return published, sample_value(text, "rating_end_to_end_seconds_count")

    deadline = time.monotonic() + 30
    while counts() != (19, 9) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert counts() == (19, 9), "the other 19 changes and 9 games, hers not yet"
    await asyncio.sleep(1)  # her rating was tried again meanwhile (blocked): still not counted
    assert counts() == (19, 9)
    stack.redis_client().delete(lease)
    deadline = time.monotonic() + 30
    while counts() != (20, 10) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert counts() == (20, 10)
    await stack.wait_committed({0: len(values)})  # her game's batch, committed once she is out
