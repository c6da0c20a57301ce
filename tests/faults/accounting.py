"""The exact accounting every fault test ends with.

`account`: every offered game applied once (its idempotency record, tests.support.records), audit()
clean on the output topic, Redis states equal to each rating's last event, no event of a game
not applied, no outbox left. It writes the test's report line (fault_report) before asserting,
so a failing run still reports its numbers.
"""

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.faults.fault_report import FaultReport, report_fault
from tests.support.audit import PREFIX, Audit, audit, read_store, seq_regressions
from tests.support.kafka import Record, read_topic
from tests.support.stack import Stack
from worker.store import keys


def drop_stale_copies(records: list[Record]) -> tuple[list[Record], int]:
    """Byte-identical copies that came after a newer event of their key, which the contract allows
    only when a send was delayed beyond the publication lease (a frozen process or broker)."""
    kept: list[Record] = []
    seen: dict[str, bytes] = {}
    top: dict[bytes | None, int] = {}
    stale = 0
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        event = json.loads(r.value or b"{}")
        event_id, seq = str(event.get("event_id")), int(event.get("seq", 0))
        if event_id in seen and seen[event_id] == r.value and seq < top.get(r.key, 0):
            stale += 1
            continue
        seen.setdefault(event_id, r.value or b"")
        top[r.key] = max(top.get(r.key, 0), seq)
        kept.append(r)
    return kept, stale


@dataclass
class Accounting:
    tally: Audit
    records: list[Record]
    stale_copies: int
    dead_letters: list[Record]


async def account(
    stack: Stack,
    good_lines: Sequence[bytes],
    *,
    fault: str,
    messages: int,
    recovery: float | None,
    first_progress: float | None = None,
    allow_stale_copies: bool = False,
    expect_no_dead_letters: bool = True,
) -> Accounting:
    """The exact accounting of a run (see the module doc); writes the report line, then asserts."""
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1, timeout=60)
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 0, timeout=10, idle=0.5)
    game_ids = {json.loads(line)["game_id"] for line in good_lines}
    assert len(game_ids) == len(good_lines), "the good lines repeat a game id"

    # The raw numbers first, before any assertion, for the report.
    payloads: dict[str, set[bytes]] = defaultdict(set)
    seqs: dict[bytes | None, set[int]] = defaultdict(set)
    event_games: dict[str, str | None] = {}
    for r in records:
        event = json.loads(r.value or b"{}")
        payloads[event["event_id"]].add(r.value or b"")
        seqs[r.key].add(int(event["seq"]))
        event_games[event["event_id"]] = event.get("game_id")
    twice = {str(event_games[e]) for e, p in payloads.items() if len(p) > 1}
    missing_events = sum(max(s) - len(s) for s in seqs.values())

    held = read_store(stack.redis.url, game_ids)
    recorded, stored, pending = held.recorded, held.states, held.outboxes

    without_late, late = drop_stale_copies(records)
    kept, stale = (without_late, late) if allow_stale_copies else (records, 0)
    copies = sum(len(v) for v in _copies(records).values())
    lost_games = game_ids - recorded
    report_fault(
        FaultReport(
            fault=fault,
            games_offered=len(game_ids),
            messages=messages,
            applied=len(game_ids & recorded),
            copies=copies,
            lost=len(lost_games) + missing_events,
            double_applied=len(twice),
            recovery_s=None if recovery is None else round(recovery, 2),
            first_progress_s=None if first_progress is None else round(first_progress, 2),
            dead_letters=len(letters),
            late_copies=late,
        )
    )

    assert not lost_games, f"{len(lost_games)} games have no idempotency record, e.g. {sorted(lost_games)[:10]}"
    assert not twice, f"{len(twice)} games applied twice (an event id with different bytes): {sorted(twice)[:10]}"
    assert not missing_events, f"{missing_events} events missing from the topic:\n" + describe_gaps(
        records, stored, pending
    )
    try:
        tally = audit(kept)
    except AssertionError as e:
        e.add_note(seq_regressions(records))
        raise
    per_game = Counter(e.game_id for e in tally.events.values() if e.game_id is not None)
    assert set(per_game) <= game_ids, f"events of games never offered: {sorted(set(per_game) - game_ids)[:10]}"
    odd = {g: n for g, n in per_game.items() if n not in (1, 2)}
    assert not odd, f"games with other than 1 or 2 distinct events: {sorted(odd.items())[:10]}"
    assert recorded == game_ids, f"records of games never offered: {sorted(recorded - game_ids)[:10]}"
    published = tally.final_states()
    differ = sorted(k for k in stored.keys() | published.keys() if stored.get(k) != published.get(k))
    assert not differ, f"{len(differ)} ratings differ between Redis and their last published event, e.g. " + "; ".join(
        f"{k}: redis {stored.get(k)} vs published {published.get(k)}" for k in differ[:3]
    )
    assert not pending, f"{len(pending)} outboxes still hold events after everything was committed: {pending[:5]}"
    if expect_no_dead_letters:
        assert not letters, f"{len(letters)} valid games dead-lettered, e.g. {letters[:3]}"
    return Accounting(tally, records, stale, letters)


def describe_gaps(records: list[Record], stored: dict[str, Any], pending: list[str], shown: int = 5) -> str:
    """The first ratings whose seq has gaps in the topic: the seqs missing, the events around them,
    and what Redis holds (its state's seq, whether an outbox still holds events)."""
    history: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        event = json.loads(r.value or b"{}")
        history[(r.key or b"").decode()].append((r.offset, int(event["seq"]), str(event["event_id"])))
    outboxes = {k.removeprefix(keys.outbox_key(PREFIX, "")) for k in pending}
    lines = []
    for key, events in sorted(history.items()):
        published = {seq for _, seq, _ in events}
        gaps = sorted(set(range(1, max(published) + 1)) - published)
        if not gaps:
            continue
        near = [f"@{o} seq {q} {e}" for o, q, e in events if gaps[0] - 2 <= q <= gaps[-1] + 2]
        state = stored.get(key)
        lines.append(
            f"{key}: seqs {gaps} never published; redis state seq {getattr(state, 'seq', None)}, outbox "
            f"{'present' if key in outboxes else 'empty'}; around: {', '.join(near)}"
        )
        if len(lines) >= shown:
            break
    return "\n".join(lines)


def copies_context(records: list[Record], shown: int = 3) -> str:
    """Where re-publications are: for the first keys with a copy, that key's records around it."""
    history: dict[bytes | None, list[tuple[int, int, str]]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        event = json.loads(r.value or b"{}")
        history[r.key].append((r.offset, int(event.get("seq", 0)), str(event.get("event_id"))))
    lines = []
    for key, events in history.items():
        seen: set[str] = set()
        for n, (_, _, event_id) in enumerate(events):
            if event_id in seen:
                around = ", ".join(f"@{o} seq {q}" for o, q, _ in events[max(0, n - 4) : n + 3])
                lines.append(f"{key!r}: {around}")
                break
            seen.add(event_id)
        if len(lines) >= shown:
            break
    return "\n".join(lines)


def _copies(records: list[Record]) -> dict[str, list[Record]]:
    """Every record after the first of its event id (byte-identical or not)."""
    first: set[str] = set()
    extra: dict[str, list[Record]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        event_id = json.loads(r.value or b"{}")["event_id"]
        if event_id in first:
            extra[event_id].append(r)
        first.add(event_id)
    return extra
