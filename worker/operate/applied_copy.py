"""Which copy of a game the workers applied, for `rebuild` and `switch-over`.

A game may reach the input topic more than once (a producer's retry, a replay) and its copies
may differ: in the facts of its digest (a conflicting duplicate, which the workers dead-letter)
or only elsewhere, in `finished_at` for instance (a duplicate, which they drop). The workers
apply the copy they consume first; a recomputation must keep that one, or it rates another
result, or the same result at another time. Copies that are equal but for their `event_id`
rate the same, and any one of them will do.

Of the copies that differ, the kept one is, in this order:
1. the copies whose `event_id` the game's events on the output topic name as their
   `source_event_id` (the output shows what was applied, until compaction removes it);
2. of those (or of all, when the output names none of them), the copies whose facts digest is
   the one of the live idempotency record (a record restored without facts, `RESTORED`,
   decides nothing); `finished_at` is not among the facts, so several copies may match;
3. of what is left, in each partition the copy of lowest offset (the workers read a partition
   in order), then across partitions the one with the earliest record timestamp (the arrival,
   as far as the topic tells it), then the lowest partition number.
A rule that matches none of the copies, or all of them, leaves the choice to the next.
"""

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, NamedTuple

from redis.asyncio import Redis

from schemas.game_finished import GameFinished
from worker.engine.engine import facts_digest
from worker.operate.redis_ops import CHUNK, with_retry
from worker.operate.topic_scan import scan
from worker.rules.interface import RatingSystem
from worker.settings import WorkerSettings
from worker.store import records


class Placed(NamedTuple):
    """A game as its input record holds it, with the record's place and timestamp (ms)."""

    game: GameFinished
    partition: int
    offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class Copy:
    """One copy of a game on the input topic: where it is, and what tells it from the others."""

    partition: int
    offset: int
    timestamp: int  # the record's, in ms
    event_id: str
    digest: bytes  # its facts digest (`worker.engine.engine.facts_digest`)

    @property
    def place(self) -> tuple[int, int]:
        return self.partition, self.offset


@dataclass
class Decided:
    """Copies kept, per game, and by which rule (the counts are reported)."""

    kept: dict[str, Copy]
    by_output: int = 0
    by_record: int = 0
    by_arrival: int = 0


def digest_of(rules: RatingSystem[Any], game: GameFinished) -> bytes:
    """The facts digest the workers record for this game."""
    return facts_digest(game, rules.facts(game))


def rated_facts(game: GameFinished) -> str:
    """All a copy tells the engine: its fields but `event_id` (which only names its events).
    Copies equal in this rate the same: any of them will do."""
    return game.model_copy(update={"event_id": ""}).model_dump_json()


def first_arrived(copies: Sequence[Copy]) -> Copy:
    """Rule 3: the lowest offset of each partition, then the earliest timestamp, then the lowest partition."""
    firsts: dict[int, Copy] = {}
    for copy in copies:
        if copy.partition not in firsts or copy.offset < firsts[copy.partition].offset:
            firsts[copy.partition] = copy
    return min(firsts.values(), key=lambda c: (c.timestamp, c.partition))


def choose(copies: Sequence[Copy], sources: Collection[str], live: bytes | None) -> tuple[Copy, str]:
    """The copy the workers applied (the module's rules in order), and the rule that decided it:
    "output", "record", or "arrival" when rule 3 chose among several. `sources`: the
    `source_event_id`s of the game's events; `live`: the live record's digest (None: no record;
    b"": restored without facts)."""
    candidates, rule = list(copies), "arrival"
    shown = [c for c in candidates if c.event_id in sources]
    if shown:
        candidates, rule = shown, "output"
    matching = [c for c in candidates if live and c.digest == live]
    if matching and len(matching) < len(candidates):
        candidates, rule = matching, "record"
    return first_arrived(candidates), rule if len(candidates) == 1 else "arrival"


async def published_sources(settings: WorkerSettings, game_ids: Collection[str]) -> dict[str, set[str]]:
    """The `source_event_id`s of the events of these games on the output topic, read to its end.
    Holds only these games' ids (every contract, v1 and v2, has both fields at the top level)."""
    found: dict[str, set[str]] = {}
    async for batch in scan(settings, settings.topic_ratings):
        for record in batch:
            try:
                event = json.loads(record.value) if record.value is not None else None  # None: a tombstone
            except ValueError:
                continue  # not an event of any contract: it shows nothing
            if not isinstance(event, dict):
                continue
            game_id, source = event.get("game_id"), event.get("source_event_id")
            if isinstance(game_id, str) and isinstance(source, str) and game_id in game_ids:
                found.setdefault(game_id, set()).add(source)
    return found


async def live_digests(redis: "Redis", prefix: str, game_ids: Sequence[str]) -> dict[str, bytes]:
    """The live idempotency records of these games that exist (b"": restored without facts)."""
    found: dict[str, bytes] = {}
    for start in range(0, len(game_ids), CHUNK):
        found.update(await with_retry(records.lookup, redis, prefix, game_ids[start : start + CHUNK]))
    return found


async def decide(
    redis: "Redis", settings: WorkerSettings, contested: dict[str, list[Copy]], live: dict[str, bytes] | None = None
) -> Decided:
    """The kept copy of each game whose copies differ (game id -> its copies). Reads the output
    topic once, and the live records unless given (`live`, for all these games)."""
    if not contested:
        return Decided({})
    ids = sorted(contested)
    sources = await published_sources(settings, contested.keys())
    if live is None:
        live = await live_digests(redis, settings.redis_key_prefix, ids)
    decided = Decided({})
    for game_id in ids:
        kept, rule = choose(contested[game_id], sources.get(game_id, ()), live.get(game_id))
        decided.kept[game_id] = kept
        if rule == "output":
            decided.by_output += 1
        elif rule == "record":
            decided.by_record += 1
        else:
            decided.by_arrival += 1
    return decided


async def applied_games(
    redis: "Redis", settings: WorkerSettings, placed: Sequence[Placed], live: dict[str, bytes]
) -> list[GameFinished]:
    """Of each game among `placed` (copies held in memory, as `switch-over` reads them), the
    copy the workers applied; `live`: the live records of these games."""
    rules = settings.rules()
    kept: list[GameFinished] = []
    contested: dict[str, list[Copy]] = {}
    games: dict[tuple[str, int, int], GameFinished] = {}
    for game_id, group in groupby(sorted(placed, key=lambda p: (p.game.game_id, p.partition, p.offset)), _game_id):
        copies = list(group)
        if len(copies) == 1 or len({rated_facts(p.game) for p in copies}) == 1:
            kept.append(copies[0].game)  # they rate the same
            continue
        contested[game_id] = [
            Copy(p.partition, p.offset, p.timestamp, p.game.event_id, digest_of(rules, p.game)) for p in copies
        ]
        games.update({(game_id, p.partition, p.offset): p.game for p in copies})
    decided = await decide(redis, settings, contested, live)
    kept.extend(games[(game_id, *copy.place)] for game_id, copy in decided.kept.items())
    return kept


def _game_id(placed: Placed) -> str:
    return placed.game.game_id
