"""An exact accounting of an output topic: what every test of the stream checks at the end.

`audit` checks the output topic's records against the contract and the rules; `check_everything`
checks a whole run of the workers: the output, the idempotency records and the states in Redis.
Both for the arena (contract v1, the default) or another rating system (`system`: its contract's
model, its rules, its state in Redis under its default prefix). `glicko2`'s events do not say
who was white, and colour matters in its expected score: its audit takes the input games (by
game id, `games_of`) to recompute every game from the states before it.
"""

import json
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

import redis

from schemas.game_finished import GameFinished
from schemas.rating_changed import RatingChanged, RatingStateSnapshot
from schemas.rating_changed_v2 import CcRatingChanged, Glicko2RatingChanged
from tests.support import records
from tests.support.kafka import Record, read_topic
from tests.support.stack import Stack
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths
from worker.rules.interface import Change, Pairing, Rated
from worker.store import keys
from worker.systems.arena.rules import ArenaRules
from worker.systems.arena.state import UNSEEN, QualifyingGame, RatingState
from worker.systems.glicko2 import rules as glicko2
from worker.systems.registry import BY_NAME
from worker.systems.uscf_cc import rules as uscf_cc

PREFIX = "rating:"  # the worker's default RATING_REDIS_KEY_PREFIX
# Each system's events as its contract's model reads them (the fields the audit reads are common).
MODELS: dict[str, type[RatingChanged] | type[CcRatingChanged] | type[Glicko2RatingChanged]] = {
    "arena": RatingChanged,
    "uscf-cc": CcRatingChanged,
    "glicko2": Glicko2RatingChanged,
}
Event = RatingChanged | CcRatingChanged | Glicko2RatingChanged
# glicko2: a player new to a category plays his first game from 1500.00 (his first event's
# rating_before); only an import over no state has none.
GLICKO2_NEW_RATING = Decimal("1500.00")


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
        read = BY_NAME[BY_NAME[self.system].rules.name].contract.read
        return {key: read(self.payloads[events[-1].event_id]).state for key, events in self.by_key.items()}


def audit(records: list[Record], system: str = "arena", games: Mapping[str, GameFinished] | None = None) -> Audit:
    """Check the contract's publication guarantees and the rules on every event; return the tally.
    `games`: the input games by id, which glicko2's check needs (and the others ignore)."""
    if system == "glicko2" and games is None:
        raise ValueError("glicko2's audit needs the input games (games_of(lines)): an event does not say who was white")
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
            if before is None and system == "glicko2" and after.kind != "imported":
                previous = GLICKO2_NEW_RATING
            assert after.rating_before == previous, f"{key} seq {after.seq}: rating_before is not the last rating"
    result.by_key = dict(per_key)
    if system == "arena":
        check_rules(result)
    elif system == "glicko2":
        assert games is not None
        check_glicko2_rules(result, games)
    else:
        check_cc_rules(result)
    return result


def games_of(lines: Iterable[bytes], system: str = "glicko2") -> dict[str, GameFinished]:
    """The valid games among input lines, by game id (a game id's first valid line: a later line
    with other facts is a conflicting duplicate, dead-lettered)."""
    model = BY_NAME[system].rules.game_model
    games: dict[str, GameFinished] = {}
    for line in lines:
        try:
            game = model.model_validate_json(line)
        except ValueError:
            continue
        games.setdefault(game.game_id, game)
    return games


def check_glicko2_rules(result: Audit, games: Mapping[str, GameFinished]) -> None:
    """glicko2: every counted game of `games` publishes both players' rated_game, and no other
    game publishes anything; each game's two events are exactly what `glicko2.rate` gives from
    the states before it (each rating's previous event's state, or a new rating's): kind, state
    (seq aside) and detail (E, the RD and sigma the game used). An import's detail holds the
    stored RD and sigma before it (none over no state)."""
    read = BY_NAME[BY_NAME[result.system].rules.name].contract.read
    rules = BY_NAME[result.system].rules
    before: dict[str, glicko2.GlickoState] = {}
    for key, events in result.by_key.items():
        previous = glicko2.GlickoState()
        for e in events:
            before[e.event_id] = previous
            if e.kind == "imported":
                assert isinstance(e, Glicko2RatingChanged)
                d = e.detail
                had = (None, None) if previous.seq == 0 else (previous.deviation, previous.volatility)
                told = (_hundredths_or_none(d.deviation_before), _nanos_or_none(d.volatility_before))
                assert told == had, f"{key} seq {e.seq}: imported's deviation/volatility before {told}, stored {had}"
            previous = read(result.payloads[e.event_id]).state
    by_game: dict[str, list[Glicko2RatingChanged]] = defaultdict(list)
    for e in result.events.values():
        if e.game_id is not None:
            assert isinstance(e, Glicko2RatingChanged)
            by_game[e.game_id].append(e)
    unknown = sorted(set(by_game) - set(games))
    assert not unknown, f"events of games not in the input: {unknown[:10]}"
    counted = {g for g, game in games.items() if isinstance(rules.category(game), Category)}
    silent = sorted(counted - set(by_game))
    assert not silent, f"{len(silent)} counted games published nothing (not_converged?), e.g. {silent[:10]}"
    uncounted = sorted(set(by_game) - counted)
    assert not uncounted, f"{len(uncounted)} games the rules do not count have events, e.g. {uncounted[:10]}"
    for game_id, events in by_game.items():
        game = games[game_id]
        mine = {e.player_id: e for e in events}
        assert len(events) == 2 and set(mine) == {game.white_id, game.black_id}, (
            f"{game_id}: events for {[e.player_id for e in events]}, not both players' "
            f"({game.white_id} white, {game.black_id} black)"
        )
        white, black = mine[game.white_id], mine[game.black_id]
        category = rules.category(game)
        white_score, black_score = glicko2.SCORES[game.result]
        for e, opponent, score in ((white, game.black_id, white_score), (black, game.white_id, black_score)):
            facts = (e.category, e.opponent_id, e.score, e.finished_at, e.source_event_id)
            want = (category, opponent, Decimal(str(score)), game.finished_at, game.event_id)
            assert facts == want, f"{e.event_id}: category, opponent, score, finished_at, source {facts} != {want}"
        try:
            changes = glicko2.rate(before[white.event_id], before[black.event_id], game.finished_at, game.result)
        except glicko2.NotConverged:
            raise AssertionError(f"{game_id}: the rules change nothing (not_converged) but it has events") from None
        got = [_glicko2_change(read(result.payloads[e.event_id]).state, e) for e in (white, black)]
        expected = [_glicko2_expected(c) for c in changes]
        assert got == expected, (
            f"{game_id}: the published changes (white, black) {got} are not what the rules give from the states "
            f"before: {expected}"
        )


GlickoChange = tuple[str, glicko2.GlickoState, Hundredths | None, Hundredths | None, int | None]


def _glicko2_change(state: glicko2.GlickoState, e: Glicko2RatingChanged) -> GlickoChange:
    d = e.detail
    return (
        e.kind,
        state._replace(seq=0),
        _hundredths_or_none(d.expected_score),
        _hundredths_or_none(d.deviation_before),
        _nanos_or_none(d.volatility_before),
    )


def _glicko2_expected(change: Change[glicko2.GlickoState]) -> GlickoChange:
    # glicko2's detail: the RD and sigma the game used (RD0, sigma0).
    deviation_before, volatility_before = cast(tuple[Hundredths, glicko2.Nanos], change.detail)
    return (change.kind, change.after._replace(seq=0), change.expected_score, deviation_before, volatility_before)


def _hundredths_or_none(value: Decimal | None) -> Hundredths | None:
    return None if value is None else hundredths(value)


def _nanos_or_none(value: Decimal | None) -> int | None:
    return None if value is None else int(value * 10**9)


def check_cc_rules(result: Audit) -> None:
    """uscf-cc: every game's changes are exactly what the rules give from the states before it.
    A game with one event is a special forfeit (only its winner changes: the loser's state is
    not read); every other game publishes both players' events."""
    read = BY_NAME[BY_NAME[result.system].rules.name].contract.read
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
    prefix = BY_NAME[system].names.redis_key_prefix
    decode = BY_NAME[system].codec.decode
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
    """The output audits clean, every game is recorded once, Redis ends where the output does.
    (glicko2's audit reads the games from `lines`.)"""
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1, timeout=60)
    games = games_of(lines, system) if system == "glicko2" else None
    try:
        tally = audit(records, system, games)
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
