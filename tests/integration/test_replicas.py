"""Several workers in one group: games of one player on many partitions at once, and crashes.

Games are keyed by game id, so a player's games are spread over every partition and the
workers race for the same ratings: only the per-rating check-and-set keeps them in order.
Whatever the interleaving, the output must audit clean and Redis must end in the state of
each rating's last published event.
"""

import asyncio
import json
import random
import signal
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.integration.audit import Audit, audit
from tests.integration.conftest import Stack
from tests.integration.fault_report import FaultReport, report_fault
from tests.integration.kafka_io import Record, committed, read_topic
from tests.integration.test_stream import wait_committed
from worker.embedded.simulation import ArenaSimulation
from worker.store import keys
from worker.store.state_codec import decode_state

pytestmark = pytest.mark.integration

PREFIX = "rating:"  # the worker's default RATING_REDIS_KEY_PREFIX
# Each test takes 10-40 s on 2 cores and every wait inside has its own shorter bound; this one
# only turns a hang anywhere else into a failure.
TEST_TIMEOUT = 120.0
LOG_TAIL = 8000


def run(stack: Stack, body: Coroutine[Any, Any, None]) -> None:
    """Run the test's body under a deadline; a failure carries the tail of each worker's log."""
    try:
        asyncio.run(asyncio.wait_for(body, TEST_TIMEOUT))
    except (AssertionError, TimeoutError) as e:
        e.add_note(logs_tail(stack))
        raise


def logs_tail(stack: Stack) -> str:
    """The end of every worker's log (JSON lines), the last workers first."""
    tails = []
    for n in reversed(range(len(stack.workers))):
        text = (stack.tmp / f"worker-{n}.log").read_text(errors="replace")
        tails.append(f"--- worker-{n} (pid {stack.workers[n].pid}, exit {stack.workers[n].poll()}) ---\n{text[-1500:]}")
    return "\n".join(tails)[:LOG_TAIL]


def keyed(lines: list[bytes]) -> list[bytes | None]:
    """Keyed by game id, as the arena does: one player's games land in many partitions."""
    return [json.loads(line)["game_id"].encode() for line in lines]


async def seeded_simulation(stack: Stack, players: int, seed: int) -> ArenaSimulation:
    sim = ArenaSimulation(players, seed=seed)
    seed_file = stack.tmp / "seed.csv"
    seed_file.write_text(sim.seed_csv())
    imported = stack.import_seed(seed_file)
    assert imported.returncode == 0, imported.stderr.decode(errors="replace")
    return sim


async def end_offsets(stack: Stack, produced: int) -> dict[int, int]:
    """Each games partition's end, from its records (the broker's end_offsets() is wrong)."""
    records = await read_topic(stack.broker.bootstrap, stack.games_topic, produced, timeout=30, idle=0.5)
    assert len(records) == produced, f"{len(records)} records in {stack.games_topic}, {produced} produced"
    end: dict[int, int] = defaultdict(int)
    for r in records:
        end[r.partition] = max(end[r.partition], r.offset + 1)
    return dict(end)


async def check_everything(stack: Stack, lines: list[bytes]) -> Audit:
    """The output audits clean, every game is recorded once, Redis ends where the output does."""
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1, timeout=60)
    try:
        tally = audit(records)
    except AssertionError as e:
        e.add_note(seq_regressions(records))
        raise
    game_ids = {json.loads(line)["game_id"] for line in lines}
    assert len(game_ids) == len(lines), "the simulation repeated a game id"

    per_game = Counter(e.game_id for e in tally.events.values() if e.game_id is not None)
    assert set(per_game) <= game_ids, f"events of unknown games: {sorted(set(per_game) - game_ids)[:10]}"
    odd = {g: n for g, n in per_game.items() if n not in (1, 2)}
    assert not odd, f"games with other than 1 or 2 distinct events: {sorted(odd.items())[:10]}"

    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 0, timeout=5, idle=0.5)
    assert not letters, f"{len(letters)} valid games dead-lettered, e.g. {letters[:3]}"

    r = redis.Redis.from_url(stack.redis.url, socket_timeout=10)
    try:
        game_prefix = keys.game_key(PREFIX, "")
        recorded = {k.decode().removeprefix(game_prefix) for k in r.scan_iter(f"{game_prefix}*", count=5000)}
        missing = game_ids - recorded
        assert not missing, f"{len(missing)} games have no idempotency record, e.g. {sorted(missing)[:10]}"
        assert recorded == game_ids, f"records of games never produced: {sorted(recorded - game_ids)[:10]}"

        state_prefix = keys.state_key(PREFIX, "")
        state_keys = list(r.scan_iter(f"{state_prefix}*", count=5000))
        stored = {}
        for key, value in zip(state_keys, r.mget(state_keys) if state_keys else [], strict=True):
            assert isinstance(value, bytes), f"{key!r} vanished or is not a string: {value!r}"
            stored[key.decode().removeprefix(state_prefix)] = decode_state(value)
        published = tally.final_states()
        differ = sorted(k for k in stored.keys() | published.keys() if stored.get(k) != published.get(k))
        assert not differ, (
            f"{len(differ)} ratings differ between Redis and their last published event, e.g. "
            + "; ".join(f"{k}: redis {stored.get(k)} vs published {published.get(k)}" for k in differ[:3])
        )
        # Everything committed was acknowledged by Kafka, so no outbox may still hold an event.
        pending = [k.decode() for k in r.scan_iter(f"{keys.outbox_key(PREFIX, '')}*", count=5000)]
        assert not pending, f"{len(pending)} outboxes still hold events after everything was committed: {pending[:5]}"
    finally:
        r.close()
    return tally


def seq_regressions(records: list[Record]) -> str:
    """Where a key's seq went back in the output: those keys' records around the first step back."""
    history: dict[bytes | None, list[tuple[int, int, int, str]]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        event = json.loads(r.value or b"{}")
        history[r.key].append((r.partition, r.offset, event.get("seq", 0), event.get("event_id", "")))
    found: list[tuple[tuple[int, int], str]] = []
    for key, events in history.items():
        top = 0
        for n, (partition, offset, seq, _) in enumerate(events):
            if seq < top:
                shown = ", ".join(f"@{o} seq {q} {i}" for _, o, q, i in events[max(0, n - 8) : n + 3])
                found.append(((partition, offset), f"{key!r} (partition {partition}): {shown}"))
                break
            top = max(top, seq)
    found.sort()
    return f"{len(found)} keys whose seq goes back, first ones:\n" + "\n".join(f for _, f in found[:5])


def test_three_workers_on_twelve_partitions_apply_every_game_once(stack: Stack) -> None:
    run(stack, _three_workers(stack))


async def _three_workers(stack: Stack) -> None:
    await stack.create_topics(games=12, ratings=6)
    sim = await seeded_simulation(stack, 300, seed=31)
    lines = list(sim.game_lines(20_000))
    await stack.produce(lines, keyed(lines))
    end = await end_offsets(stack, len(lines))
    assert len(end) == 12, f"games landed in {len(end)} of 12 partitions"

    started = time.monotonic()
    for _ in range(3):
        stack.start_worker()
    await wait_committed(stack, end, timeout=60)
    took = time.monotonic() - started
    assert all(w.poll() is None for w in stack.workers), f"a worker exited: {[w.returncode for w in stack.workers]}"

    tally = await check_everything(stack, lines)
    sharing = sum(_holds_partitions(stack.tmp / f"worker-{n}.log") for n in range(len(stack.workers)))
    print(
        f"\n3 workers ({sharing} holding partitions), 12 partitions: {len(lines)} games committed in {took:.1f} s; "
        f"{len(tally.events)} distinct events, {tally.copies} duplicate copies"
    )


@pytest.mark.faults
def test_sigkill_at_random_moments_loses_nothing_and_applies_nothing_twice(stack: Stack) -> None:
    run(stack, _sigkill(stack))


KILLS = 6
# Each kill stalls the group until the dead member's session expires (~5-6 s on tansu with a
# 3 s session), so the kills take ~35 s: 40 chunks of 250 games 0.8 s apart keep a steady
# load (~300 games/s) through all of them.
CHUNKS = 40
CHUNK_PAUSE = 0.8
HOLDER_WAIT = 15.0  # a rebalance after a kill takes ~6 s; twice that means the group is stuck


async def _sigkill(stack: Stack) -> None:
    await stack.create_topics(games=6, ratings=4)
    sim = await seeded_simulation(stack, 300, seed=47)
    lines = list(sim.game_lines(10_000))
    size = len(lines) // CHUNKS
    chunks = [lines[i : i + size] for i in range(0, len(lines), size)]
    rng = random.Random(20261101)

    await stack.produce(chunks[0], keyed(chunks[0]))
    stack.start_worker()
    stack.start_worker()
    await _until_some_committed(stack, partitions=6)

    async def feed() -> None:
        for chunk in chunks[1:]:
            await stack.produce(chunk, keyed(chunk))
            await asyncio.sleep(CHUNK_PAUSE)

    feeding = asyncio.create_task(feed())
    killed: list[subprocess.Popen[bytes]] = []
    for _ in range(KILLS):
        await asyncio.sleep(rng.uniform(0.5, 3.0))
        holders = await _holders(stack, rng)
        victim = rng.choice(holders)
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        killed.append(victim)
        print(f"{datetime.now(UTC):%H:%M:%S.%f} SIGKILL worker-{stack.workers.index(victim)} (pid {victim.pid})")
        stack.start_worker()
    await feeding

    end = await end_offsets(stack, len(lines))
    started = time.monotonic()
    await wait_committed(stack, end, timeout=60)
    recovery = time.monotonic() - started
    crashed = [w.returncode for w in stack.workers if w not in killed and w.poll() is not None]
    assert not crashed, f"workers not killed by the test exited on their own: {crashed}"

    tally = await check_everything(stack, lines)
    # check_everything passed: every game recorded once, nothing lost or applied twice.
    offered = len(lines)
    report_fault(FaultReport(f"{len(killed)} worker SIGKILLs", offered, offered, offered, tally.copies, 0, 0, recovery))
    print(
        f"\n{len(killed)} SIGKILLs: {len(lines)} games, {len(tally.events)} distinct events, "
        f"{tally.copies} duplicate copies; all committed {recovery:.1f} s after the load ended"
    )


async def _holders(stack: Stack, rng: random.Random) -> list[subprocess.Popen[bytes]]:
    """The live workers holding partitions, once one does, plus a random 0-0.5 s into its work.

    Right after a kill the group rebalances and nobody holds any; a replacement killed before it
    joined, or a worker killed while it waits for the rebalance, proves nothing. The backlog that
    built up during the rebalance is in flight just after the assignment.
    """
    deadline = time.monotonic() + HOLDER_WAIT
    while True:
        assert time.monotonic() < deadline, f"no worker held partitions within {HOLDER_WAIT} s"
        live = [(n, w) for n, w in enumerate(stack.workers) if w.poll() is None]
        assert live, "no worker alive"
        if [w for n, w in live if _holds_partitions(stack.tmp / f"worker-{n}.log")]:
            await asyncio.sleep(rng.uniform(0, 0.5))
            holding = [w for n, w in live if w.poll() is None and _holds_partitions(stack.tmp / f"worker-{n}.log")]
            if holding:
                return holding
        await asyncio.sleep(0.05)


def _holds_partitions(log: Path) -> bool:
    """Whether the worker's last assignment message (in its JSON log) gave it partitions."""
    last = ""
    for line in log.read_text(errors="replace").splitlines():
        if '"partitions assigned: ' in line or '"partitions revoked: ' in line:
            last = line
    return '"partitions assigned: ' in last and '"partitions assigned: []"' not in last


async def _until_some_committed(stack: Stack, partitions: int, timeout: float = 30) -> None:
    """The workers joined and are busy: kills then hit work in flight, not an idle start."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = await committed(stack.broker.bootstrap, f"group-{stack.name}", stack.games_topic, partitions)
        if sum(done.values()) > 0:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"nothing committed within {timeout} s of starting the workers")
