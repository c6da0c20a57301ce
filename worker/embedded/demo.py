"""`rating-worker demo`: the whole service on the embedded stack, with a live view in the terminal.

Starts a local broker (tansu) and a local redis-server on free ports, creates the topics,
seeds established players (through `import`'s path), starts worker processes, feeds them a
live stream of generated games and shows what happens, until Ctrl-C (or --duration). A
per-period system's demo also closes its periods: `fide`'s months with `close-period`'s steps,
its games' months going by faster than the calendar's (`worker.embedded.demo_months`);
`tornelo`'s tournaments by their end records, read by the close follower of `close-period
--follow` (`worker.embedded.demo_tournaments`).
"""

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from worker.embedded import demo_months, demo_tournaments
from worker.embedded.stack import TANSU_FETCH_WAIT_MS, Broker, RedisServer, create_topics, start_worker, worker_env
from worker.embedded.tournament_feed import TournamentFeed, paced
from worker.embedded.traffic import traffic
from worker.operate.importer import import_ratings
from worker.replay.seed_file import read_seed_file
from worker.settings import WorkerSettings
from worker.systems import registry
from worker.systems.arena.traffic import ArenaSimulation

PARTITIONS = 4
REFRESH_SECONDS = 1.0
TOP = 5
RECENT = 8


@dataclass
class View:
    """What the dashboard shows, built from the output and dead-letter topics."""

    ratings: dict[str, tuple[str, int | None, int]] = field(default_factory=dict)  # key -> (status, display, seq)
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=RECENT))
    kinds: Counter[str] = field(default_factory=Counter)
    events: int = 0  # from games (what the workers publish live)
    seeded: int = 0  # `imported` events of the seeding, before the stream
    dead_letters: int = 0
    produced: dict[int, int] = field(default_factory=dict)  # partition -> end offset
    closes: deque[str] = field(default_factory=lambda: deque(maxlen=3))  # a per-period system's, latest first

    def add(self, value: bytes) -> None:
        e = json.loads(value)
        if e["kind"] == "imported":
            self.seeded += 1
        else:
            self.events += 1
            self.kinds[e["kind"]] += 1
        key = f"{e['player_id']}/{e['category']}"
        state = e["state"]  # v1's says its status; v2's has the rating alone (null while unrated)
        status = state.get("status", "rated" if state.get("rating") is not None else "unrated")
        self.ratings[key] = (status, e["display_after"] if status == "rated" else None, e["seq"])
        delta = f" ({e['delta']:+.2f})" if e["delta"] is not None else ""
        versus = f" vs {e['opponent_id']}" if e["opponent_id"] else ""
        self.recent.appendleft(
            f"{e['player_id']:>8} {e['category']:<6} {e['display_before']:>5} -> {e['display_after']:<5}"
            f"{delta:<11} {e['kind']}{versus}"
        )

    def top(self, category: str) -> list[tuple[str, int]]:
        rated = [(k.split("/")[0], d) for k, (s, d, _) in self.ratings.items() if k.endswith(f"/{category}") and d]
        return sorted(rated, key=lambda x: -x[1])[:TOP]


def _stream(sim: ArenaSimulation) -> Iterator[bytes]:
    """The generator's lines, with a few bad records and redeliveries."""
    return sim.game_lines(10**9, bad_share=0.005, redelivery_share=0.005)


async def _feed(producer: AIOKafkaProducer, topic: str, sim: ArenaSimulation, rate: float, view: View) -> None:
    """A live stream: `rate` games a second, with a few bad records and redeliveries (no close
    line: in the service a period is closed by `close-period`, never by an input record)."""
    async for line in paced(demo_months.without_close_lines(_stream(sim)), rate):
        _sent(view, await producer.send(topic, line))


def _sent(view: View, future: "asyncio.Future[object]") -> None:
    future.add_done_callback(lambda f: _record(view, f))


def _record(view: View, future: "asyncio.Future[object]") -> None:
    if not future.cancelled() and future.exception() is None:
        meta = future.result()
        view.produced[meta.partition] = max(view.produced.get(meta.partition, 0), meta.offset + 1)  # type: ignore[attr-defined]


async def _watch(bootstrap: str, settings: WorkerSettings, view: View) -> None:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        await consumer.topics()
        tps = [TopicPartition(settings.topic_ratings, p) for p in range(PARTITIONS)]
        dlq = TopicPartition(settings.topic_dead_letters, 0)
        consumer.assign([*tps, dlq])
        await consumer.seek_to_beginning()
        while True:
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                for record in records:
                    if tp == dlq:
                        view.dead_letters += 1
                    elif record.value is not None:
                        view.add(record.value)
    finally:
        await consumer.stop()


async def _lag(bootstrap: str, settings: WorkerSettings, view: View) -> tuple[dict[int, int], bool]:
    """The group's lag per partition, and whether it has committed anything yet (the workers joined)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=settings.kafka_group_id)
    await consumer.start()
    try:
        lag, committed = {}, False
        for p, end in sorted(view.produced.items()):
            done = await consumer.committed(TopicPartition(settings.topic_games, p))
            committed = committed or done is not None
            lag[p] = max(0, end - (done or 0))
        return lag, committed
    finally:
        await consumer.stop()


JOINING = "workers joining the consumer group (a few seconds)..."


def _render(
    view: View,
    lag: dict[int, int],
    joined: bool,
    rate_in: float,
    rate_out: float,
    header: str,
    tty: bool,
    categories: tuple[str, ...],
    months: str | None = None,
    label: str = "months",
) -> str:
    """The view: one line when piped (a per-period system's `months`, where its periods stand, at its
    end), the terminal's screen otherwise (`months` on a line of its own, after `label`)."""
    if not tty:
        where = "" if months is None else f"; {months}"
        if not joined:
            return f"demo: {rate_in:6.0f} games/s in, {JOINING}{where}"
        return (
            f"demo: {rate_in:6.0f} games/s in, {rate_out:6.0f} events/s out, lag {sum(lag.values())}, "
            f"{view.events} events, {view.dead_letters} dead letters, {len(view.ratings)} ratings{where}"
        )
    lines = [header, ""]
    if not joined:
        lines.append(f"games in {rate_in:7.0f}/s   {JOINING}")
    else:
        lines.append(f"games in {rate_in:7.0f}/s   events out {rate_out:7.0f}/s   total events {view.events}")
    lines.append(f"lag per partition {lag}   dead letters {view.dead_letters}")
    lines.append("kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(view.kinds.items())))
    if months is not None:
        lines.append(f"{label}: {months}" if label else months)
        lines.extend(f"  {close}" for close in view.closes)
    lines.append("")
    columns = [view.top(c) for c in categories]
    lines.append("".join(f"{c:<22}" for c in categories))
    for i in range(TOP):
        row = ""
        for col in columns:
            row += f"{col[i][0]:>8} {col[i][1]:<13}" if i < len(col) else " " * 22
        lines.append(row)
    lines.append("")
    lines.append("recent changes:")
    lines.extend(view.recent)
    lines.append("")
    lines.append("Ctrl-C stops everything")
    return "\033[H\033[2J" + "\n".join(lines)


def _said(view: View, line: str, tty: bool) -> None:
    """A line of the demo's closes: kept for the terminal's view, printed at once when piped."""
    view.closes.appendleft(line)
    if not tty:
        print(f"demo: {line}", flush=True)


def shell_settings(env: Mapping[str, str]) -> str:
    """The stack's settings as one `export` line a shell takes (the workers' own, bar log and fetch tuning)."""
    names = ("SYSTEM", "KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL", "PARTITIONS")
    return "export " + " ".join(f"RATING_{name}={shlex.quote(env[f'RATING_{name}'])}" for name in names)


async def demo(
    players: int,
    rate: float,
    workers: int,
    duration: float | None,
    system: str = registry.DEFAULT,
    month_seconds: float = demo_months.MONTH_SECONDS,
) -> int:
    """The demo of `system` until Ctrl-C or `duration`; its temporary folders (worker logs, Redis's
    files) are removed at exit, unless a worker failed (its log is kept, and named). A per-period
    system's games go by a month every `month_seconds` (`worker.embedded.demo_months`)."""
    # The embedded default is the system's defaults, whatever the shell says: its workers get no
    # RATING_* variable but those it sets (worker_env), and its own settings must name the same things.
    ignored = sorted(k for k in os.environ if k.startswith("RATING_"))
    for name in ignored:
        del os.environ[name]
    if ignored:
        print(f"demo: ignoring {', '.join(ignored)} (the demo runs the {system} defaults)", file=sys.stderr)
    broker, redis = Broker().start(), RedisServer().start()
    processes: list[subprocess.Popen[bytes]] = []
    tmp = Path(tempfile.mkdtemp(prefix="rating-demo-"))
    keep = False
    try:
        # tansu holds a fetch to the end of its wait (see the setting): keep games moving.
        env = worker_env(
            broker,
            redis,
            log_level="warning",
            kafka_fetch_max_wait_ms=TANSU_FETCH_WAIT_MS,
            system=system,
            partitions=PARTITIONS,
        )
        settings = WorkerSettings(
            kafka_bootstrap_servers=broker.bootstrap,
            redis_url=redis.url,
            metrics_port=0,
            system=system,  # a RATING_SYSTEM value, checked by the model
            partitions=PARTITIONS,
        )
        topics = {settings.topic_games: PARTITIONS, settings.topic_ratings: PARTITIONS, settings.topic_dead_letters: 1}
        by_records = settings.spec().ends_by_record
        if by_records:
            topics[settings.topic_tournaments] = 1  # read in order by one follower
        await create_topics(broker.bootstrap, topics)
        rules = settings.rules()
        tty = sys.stdout.isatty()
        view = View()
        closer: demo_months.MonthCloser | None = None
        follower: demo_tournaments.TournamentCloser | None = None
        sim: ArenaSimulation
        plan: str | None = None
        if by_records:
            tournaments = demo_tournaments.DemoTournaments(players, int(time.time()))
            follower = demo_tournaments.TournamentCloser(settings, lambda line: _said(view, line, tty))
            plan = follower.plan(tournaments, rate)
            sim = tournaments
        elif settings.spec().periodic:
            fast = demo_months.fast_months(players, int(time.time()), rate, month_seconds, datetime.now(UTC))
            closer = demo_months.MonthCloser(settings, fast, lambda line: _said(view, line, tty))
            await closer.init()  # before the seeding: refused once a rating has state
            plan = f"months: {closer.plan(month_seconds, rate)}"
            sim = fast
        else:
            sim = traffic(settings.spec())(players, seed=int(time.time()))
        seed_file = tmp / "seed.csv"
        seed_file.write_text(sim.seed_csv())
        counts, _ = await import_ratings(settings, read_seed_file(seed_file, rules), force=False)
        processes = [start_worker(env, tmp / f"worker-{i}.log") for i in range(workers)]
        stop_how = "Ctrl-C stops everything" if duration is None else f"stops in {duration:g} s (or at Ctrl-C)"
        first = (
            f"demo ({system}): broker {broker.bootstrap}, redis {redis.url}, {workers} "
            f"worker{'s' if workers != 1 else ''}, {players} players ({counts['imported']} ratings seeded), "
            f"worker logs in {tmp} (removed at exit); {stop_how}"
        )
        settings_line = (
            f"its settings, for `rating-worker check` or any command in another shell: {shell_settings(env)}"
        )
        header = f"rating {first}\n{settings_line}"
        if plan is not None:
            header += f"\n{plan}"
        # Whatever the output: the terminal's view repeats it, a pipe gets it once.
        if not tty:
            print(f"{first}\ndemo: {settings_line}", flush=True)
            if plan is not None:
                print(f"demo: {plan.removeprefix('months: ')}", flush=True)
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5)
        await producer.start()
        feed: TournamentFeed | None = None
        if follower is not None:
            topic = settings.topic_tournaments
            feed = TournamentFeed(producer, settings.topic_games, topic, lambda f: _sent(view, f), follower.published)
            tasks = [asyncio.create_task(feed.run(_stream(sim), rate)), asyncio.create_task(follower.run())]
        else:
            tasks = [asyncio.create_task(_feed(producer, settings.topic_games, sim, rate, view))]
        tasks.append(asyncio.create_task(_watch(broker.bootstrap, settings, view)))
        if closer is not None:
            tasks.append(asyncio.create_task(closer.run()))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, stop.set)
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        started = time.monotonic()
        last_in, last_out, last_t = 0, 0, started
        try:
            while not stop.is_set() and (duration is None or time.monotonic() - started < duration):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), REFRESH_SECONDS)
                now = time.monotonic()
                produced = sum(view.produced.values())
                lag, committed = await _lag(broker.bootstrap, settings, view)
                elapsed = max(now - last_t, 1e-6)
                rate_in, rate_out = (produced - last_in) / elapsed, (view.events - last_out) / elapsed
                last_in, last_out, last_t = produced, view.events, now
                joined = committed or view.events > 0
                months: str | None = None
                label = "months"
                if feed is not None and follower is not None:
                    months, label = follower.status(feed.running(), feed.ended), ""
                elif closer is not None:
                    months = closer.status()
                shown = _render(view, lag, joined, rate_in, rate_out, header, tty, rules.categories, months, label)
                print(shown, flush=True)
                failed = [t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None]
                if failed:  # the stream, the view, the closes or the follower: nothing more would happen
                    keep = True
                    print(f"demo: failed: {failed[0].exception()!r}; the worker logs are in {tmp}", file=sys.stderr)
                    return 1
                for p in processes:
                    if p.poll() is not None:
                        keep = True  # its log tells why
                        print(f"demo: a worker exited with status {p.returncode}; its log is in {tmp}", file=sys.stderr)
                        return 1
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await producer.stop()
        for p in processes:
            p.send_signal(signal.SIGTERM)
        statuses = [p.wait(timeout=30) for p in processes]
        # A worker still starting (importing, before its handlers) when stopped ends by the signal
        # itself: stopped as asked, as a pod is (a Ctrl-C right after the demo's first lines).
        early = ", -15: stopped while starting" if -signal.SIGTERM in statuses else ""
        print(f"demo: stopped; workers exited with {statuses}{early}; {view.events} rating events", file=sys.stderr)
        return 0 if all(s in (0, -signal.SIGTERM) for s in statuses) else 1
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
        broker.kill()
        redis.kill()
        shutil.rmtree(redis.directory, ignore_errors=True)
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
