"""An exact accounting of an output topic: what every test of the stream checks at the end."""

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from schemas.rating_changed import RatingChanged, RatingStateSnapshot
from tests.integration.kafka_io import Record
from worker.rules.arena import ArenaRules
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths
from worker.rules.state import UNSEEN, QualifyingGame, RatingState
from worker.rules.system import Pairing, Rated


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
    events: dict[str, RatingChanged] = field(default_factory=dict)  # by event_id, one per event
    copies: int = 0  # byte-identical re-publications seen
    by_key: dict[str, list[RatingChanged]] = field(default_factory=dict)  # distinct events in seq order

    @property
    def game_ids(self) -> set[str]:
        return {e.game_id for e in self.events.values() if e.game_id is not None}

    def final_states(self) -> dict[str, RatingState]:
        return {key: to_state(events[-1].state) for key, events in self.by_key.items()}


def audit(records: list[Record]) -> Audit:
    """Check the contract's publication guarantees and the rules on every event; return the tally."""
    result = Audit()
    payloads: dict[str, bytes] = {}
    last_seq: dict[str, int] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        assert r.value is not None and r.key is not None
        event = RatingChanged.model_validate_json(r.value)
        key = f"{event.player_id}/{event.category}"
        assert r.key == key.encode(), f"record key {r.key!r} is not {key}"
        if event.event_id in payloads:
            assert payloads[event.event_id] == r.value, f"{event.event_id} published with different bytes"
            result.copies += 1
        else:
            payloads[event.event_id] = r.value
            result.events[event.event_id] = event
        # Per key (one partition), never an older seq after a newer one.
        assert event.seq >= last_seq.get(key, 0), f"{key}: seq {event.seq} after {last_seq[key]}"
        last_seq[key] = event.seq
    per_key: dict[str, list[RatingChanged]] = defaultdict(list)
    for event in result.events.values():
        per_key[f"{event.player_id}/{event.category}"].append(event)
    for key, events in per_key.items():
        events.sort(key=lambda e: e.seq)
        assert [e.seq for e in events] == list(range(1, len(events) + 1)), f"{key}: seq not gapless"
        for before, after in zip([None, *events], events, strict=False):
            previous = None if before is None else before.state.rating
            assert after.rating_before == previous, f"{key} seq {after.seq}: rating_before is not the last rating"
    result.by_key = dict(per_key)
    check_rules(result)
    return result


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
