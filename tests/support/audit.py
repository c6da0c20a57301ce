"""An exact accounting of an output topic: what every test of the stream checks at the end.

`audit` checks the output topic's records against the contract and the rules; `check_everything`
checks a whole run of the workers: the output, the idempotency records and the states in Redis.
Both for the arena (contract v1, the default) or another rating system (`system`: its contract's
model, its rules, its state in Redis under its default prefix).
"""

import json
from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import redis

from schemas.rating_changed import RatingChanged, RatingStateSnapshot
from schemas.rating_changed_v2 import CcRatingChanged
from tests.support import records
from tests.support.kafka import Record, read_topic
from tests.support.stack import Stack
from worker.engine.contracts import contract_of
from worker.rules import uscf_cc
from worker.rules.arena import ArenaRules
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths
from worker.rules.state import UNSEEN, QualifyingGame, RatingState
from worker.rules.system import Pairing, Rated
from worker.rules.systems import RULES
from worker.settings import SYSTEM_NAMES
from worker.store import keys
from worker.store.state_codec import CODECS

PREFIX = "rating:"  # the worker's default RATING_REDIS_KEY_PREFIX
# Each system's events as its contract's model reads them (the fields the audit reads are common).
MODELS: dict[str, type[RatingChanged] | type[CcRatingChanged]] = {"arena": RatingChanged, "uscf-cc": CcRatingChanged}
Event = RatingChanged | CcRatingChanged


def hundredths(value: Decimal) -> Hundredths:
    return Hundredths(int(value * 100))


def to_state(s: RatingStateSnapshot) -> RatingState:
    qualifying = tuple(
        QualifyingGame(q.game_id, q.opponent_id, hundredths(q.opponent_rating), hundredths(q.score))
        for q in s.qualifying
    )
    rating = None if s.rating is None else hundredths(s.rating)
    return RatingState(rating, s.rated_games, qualifying, s.seq)


@dataclass
class Audit:
    system: str = "arena"
    events: dict[str, Any] = field(default_factory=dict)  # by event_id, one per event (the system's model)
    copies: int = 0  # byte-identical re-publications seen
    by_key: dict[str, list[Any]] = field(default_factory=dict)  # distinct events in seq order
    payloads: dict[str, bytes] = field(default_factory=dict)  # by event_id

    @property
    def game_ids(self) -> set[str]:
        return {e.game_id for e in self.events.values() if e.game_id is not None}

    def final_states(self) -> dict[str, Any]:
        """Each rating's state as its last event carries it, read back by the system's contract."""
        read = contract_of(RULES[self.system]).read
        return {key: read(self.payloads[events[-1].event_id]).state for key, events in self.by_key.items()}


def audit(records: list[Record], system: str = "arena") -> Audit:
    """Check the contract's publication guarantees and the rules on every event; return the tally."""
    result = Audit(system)
    payloads = result.payloads
    model = MODELS[system]
    last_seq: dict[str, int] = {}
    where: dict[str, tuple[int, int]] = {}  # the partition and offset of each key's last record
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        assert r.value is not None and r.key is not None
        event = model.model_validate_json(r.value)
        key = f"{event.player_id}/{event.category}"
        assert r.key == key.encode(), f"record key {r.key!r} is not {key}"
        copy = event.event_id in payloads
        if copy:
            assert payloads[event.event_id] == r.value, f"{event.event_id} published with different bytes"
            result.copies += 1
        else:
            payloads[event.event_id] = r.value
            result.events[event.event_id] = event
        # Per key (one partition), never an older seq after a newer one.
        assert event.seq >= last_seq.get(key, 0), (
            f"{key}: seq {event.seq} ({'a copy' if copy else 'its first publication'}, partition {r.partition} "
            f"offset {r.offset}) after seq {last_seq[key]} (partition {where[key][0]} offset {where[key][1]})"
        )
        last_seq[key] = event.seq
        where[key] = (r.partition, r.offset)
    per_key: dict[str, list[Any]] = defaultdict(list)
    for event in result.events.values():
        per_key[f"{event.player_id}/{event.category}"].append(event)
    for key, events in per_key.items():
        events.sort(key=lambda e: e.seq)
        assert [e.seq for e in events] == list(range(1, len(events) + 1)), f"{key}: seq not gapless"
        for before, after in zip([None, *events], events, strict=False):
            previous = None if before is None else before.state.rating
            assert after.rating_before == previous, f"{key} seq {after.seq}: rating_before is not the last rating"
    result.by_key = dict(per_key)
    if system == "arena":
        check_rules(result)
    else:
        check_cc_rules(result)
    return result


def check_cc_rules(result: Audit) -> None:
    """uscf-cc: every game's changes are exactly what the rules give from the states before it.
    A game with one event is a special forfeit (only its winner changes: the loser's state is
    not read); every other game publishes both players' events."""
    read = contract_of(RULES[result.system]).read
    before: dict[str, uscf_cc.CcState] = {}
    for events in result.by_key.values():
        previous = uscf_cc.CcState()
        for e in events:
            before[e.event_id] = previous
            previous = read(result.payloads[e.event_id]).state
    by_game: dict[str, list[CcRatingChanged]] = defaultdict(list)
    for e in result.events.values():
        if e.game_id is not None:
            by_game[e.game_id].append(e)
    for game_id, events in by_game.items():
        first = events[0]
        assert first.score is not None
        special = len(events) == 1
        assert not special or first.kind == "forfeit_win", f"{game_id}: one event of kind {first.kind}"
        game = uscf_cc.CcGame(Hundredths(hundredths(first.score)), special_forfeit=special)
        other = uscf_cc.CcState() if special else before[events[1].event_id]
        rated = uscf_cc.rate(game, before[first.event_id], other)
        assert isinstance(rated, Rated), f"{game_id}: the rules change nothing ({rated}) but it has events"
        expected = [c for c in (rated.white, rated.black) if c is not None]
        got = [(e.kind, read(result.payloads[e.event_id]).state._replace(seq=0), e.detail.k_factor) for e in events]
        assert got == [(c.kind, c.after._replace(seq=0), c.k_factor) for c in expected], (
            f"{game_id}: the published changes are not what the rules give from the states before"
        )


def check_rules(result: Audit) -> None:
    """Every game's changes are exactly what the rules give from the states before it."""
    before: dict[str, RatingState] = {}
    ratings_held: dict[str, set[Hundredths]] = defaultdict(set)
    for key, events in result.by_key.items():
        previous = UNSEEN
        for e in events:
            before[e.event_id] = previous
            previous = to_state(e.state)
            if previous.rating is not None:
                ratings_held[key].add(previous.rating)
    by_game: dict[str, list[RatingChanged]] = defaultdict(list)
    for e in result.events.values():
        if e.game_id is not None:
            by_game[e.game_id].append(e)
    rules = ArenaRules()
    for game_id, events in by_game.items():
        first = events[0]
        assert first.opponent_id is not None and first.score is not None
        category = Category(first.category)
        pairing = Pairing(game_id, first.player_id, first.opponent_id, Hundredths(hundredths(first.score)))
        mine = before[first.event_id]
        if len(events) == 2:
            candidates = [before[events[1].event_id]]
        else:
            # A qualifying game: the rated opponent's state is not published with it. His rating
            # then is in the qualifier's entry (or, for the 5th game, not kept anywhere): it must
            # be one he held, and with it the rules must give exactly the published change.
            assert first.kind in ("qualifying_game", "first_rating", "qualification_reset"), first
            held = ratings_held[f"{first.opponent_id}/{category}"]
            after = to_state(first.state)
            entry = [q.opponent_rating for q in after.qualifying if q.game_id == game_id]
            assert not entry or entry[0] in held, f"{game_id}: opponent rating {entry} never held"
            candidates = [RatingState(rating=r) for r in (entry or sorted(held))]
        assert any(_matches(rules.rate(pairing, category, mine, c), events) for c in candidates), (
            f"{game_id}: the published changes are not what the rules give from the states before"
        )


def _matches(rated: Rated | object, events: list[RatingChanged]) -> bool:
    if not isinstance(rated, Rated):
        return False
    expected = [c for c in (rated.white, rated.black) if c is not None]
    if len(expected) != len(events):
        return False
    for change, event in zip(expected, events, strict=True):
        got = to_state(event.state)
        if (change.kind, change.after.rating, change.after.rated_games, change.after.qualifying, change.k_factor) != (
            event.kind,
            got.rating,
            got.rated_games,
            got.qualifying,
            event.k_factor,
        ):
            return False
    return True


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


@dataclass
class Stored:
    """What the worker's Redis holds at the end of a run (the system's default prefix)."""

    recorded: set[str]  # the game ids asked about that have an idempotency record
    unknown_records: int  # records of other games (compact records have no id: counted, not named)
    states: dict[str, Any]  # by rating key (the system's states)
    outboxes: list[str]  # keys of outboxes that still hold events


def read_store(url: str, game_ids: Collection[str], system: str = "arena") -> Stored:
    prefix = SYSTEM_NAMES[system].redis_key_prefix
    decode = CODECS[system].decode
    with redis.Redis.from_url(url, socket_timeout=10) as r:
        # The records where the documented layouts put them (tests.support.records).
        compact = records.compact(r, game_ids, prefix)
        compact_total = sum(int(r.hlen(k)) for k in r.scan_iter(f"{prefix}{keys.RECORDS}*", count=5000))
        legacy_prefix = keys.game_key(prefix, "")
        legacy = {k.decode().removeprefix(legacy_prefix) for k in r.scan_iter(f"{legacy_prefix}*", count=5000)}
        recorded = compact | (legacy & set(game_ids))
        unknown = compact_total - len(compact) + len(legacy - set(game_ids))
        state_prefix = keys.state_key(prefix, "")
        state_keys = list(r.scan_iter(f"{state_prefix}*", count=5000))
        states = {}
        for key, value in zip(state_keys, r.mget(state_keys) if state_keys else [], strict=True):
            assert isinstance(value, bytes), f"{key!r} vanished or is not a string: {value!r}"
            states[key.decode().removeprefix(state_prefix)] = decode(value)
        outboxes = [k.decode() for k in r.scan_iter(f"{keys.outbox_key(prefix, '')}*", count=5000)]
    return Stored(recorded, unknown, states, outboxes)


async def check_everything(stack: Stack, lines: list[bytes], system: str = "arena") -> Audit:
    """The output audits clean, every game is recorded once, Redis ends where the output does."""
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1, timeout=60)
    try:
        tally = audit(records, system)
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

    stored = read_store(stack.redis.url, game_ids, system)
    missing = game_ids - stored.recorded
    assert not missing, f"{len(missing)} games have no idempotency record, e.g. {sorted(missing)[:10]}"
    assert not stored.unknown_records, f"{stored.unknown_records} records of games never produced"
    published = tally.final_states()
    states = stored.states
    differ = sorted(k for k in states.keys() | published.keys() if states.get(k) != published.get(k))
    assert not differ, f"{len(differ)} ratings differ between Redis and their last published event, e.g. " + "; ".join(
        f"{k}: redis {states.get(k)} vs published {published.get(k)}" for k in differ[:3]
    )
    # Everything committed was acknowledged by Kafka, so no outbox may still hold an event.
    pending = stored.outboxes
    assert not pending, f"{len(pending)} outboxes still hold events after everything was committed: {pending[:5]}"
    return tally
