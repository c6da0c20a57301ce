"""The engine: the single place where a game (or a seeded rating) becomes state changes and events.

Pure: the caller loads the states and the game's idempotency record, calls the engine, and
stores what it returns. The offline replay keeps them in dicts; the streaming worker keeps
them in Redis. Both call this unchanged, for every rating system: the system's rules
(`worker.rules.system.RatingSystem`) say what a game does to a rating, the engine does the
rest (duplicates, sequence numbers, event ids, the seeding policy) and has the system's
contract (`worker.engine.contracts`) encode each event once.
"""

import hashlib
from collections.abc import Mapping
from enum import StrEnum
from typing import Generic, NamedTuple

from schemas.game_finished import GameFinished
from worker.engine.contracts import contract_of
from worker.engine.events import RatingEvent, rating_key
from worker.rules.hundredths import ONE, Hundredths, Points, display
from worker.rules.system import Change, Kind, Rated, RatingSystem, S, SeedRow, Skip

__all__ = ["RESTORED", "Engine", "GameOutcome", "SeedOutcome", "SeedRow", "SeedVerdict", "Update", "Verdict"]

_WHITE_SCORE = {"1-0": Hundredths(100), "1/2-1/2": Hundredths(50), "0-1": Hundredths(0)}
# The idempotency record of a game restored from the output topic (`rating-worker restore`):
# its facts are unknown, so a redelivery of that game is a duplicate whatever its facts.
RESTORED = b""


class Verdict(StrEnum):
    APPLIED = "applied"  # changed at least one rating
    SKIPPED = "skipped"  # a valid game that changes nothing (see `Skip`)
    DUPLICATE = "duplicate"  # already recorded with the same facts: nothing to do
    CONFLICT = "conflicting_duplicate"  # already recorded with other facts: dead-letter it


class Update(NamedTuple, Generic[S]):
    """One rating's new state and the event that announces it, encoded once for good."""

    key: str
    state: S
    event: RatingEvent[S]
    payload: bytes


class GameOutcome(NamedTuple, Generic[S]):
    verdict: Verdict
    digest: bytes  # the game's facts digest: its idempotency record, stored unless already known
    skip: Skip | None = None
    updates: tuple[Update[S], ...] = ()


class SeedVerdict(StrEnum):
    IMPORTED = "imported"
    UNCHANGED = "unchanged"  # the row equals the current state: skipped
    REFUSED = "refused"  # the rating has state and the import was not forced
    MOVED = "moved"  # the rating changed since the seq the row expected (switch-over): not imported


class SeedOutcome(NamedTuple, Generic[S]):
    verdict: SeedVerdict
    update: Update[S] | None = None


def facts_digest(game: GameFinished, extra: str = "") -> bytes:
    """A digest of the facts that make a game the same game (contract, "Duplicates"), and a
    system's own facts beside v1's (`extra`, empty for the arena: its digests are unchanged).

    8 bytes: two different fact sets share a digest with probability 2^-64.
    """
    tc = game.time_control
    facts = (
        f"{game.white_id}|{game.black_id}|{game.result}|{game.termination}|"
        f"{int(game.rated)}|{tc.base_seconds}|{tc.increment_seconds}"
    )
    if extra:
        facts += f"|{extra}"
    return hashlib.blake2b(facts.encode(), digest_size=8).digest()


# A game's category (or why it changes nothing) and the keys of the two ratings it reads (None
# when it reads none).
Classification = tuple[str | Skip, tuple[str, str] | None]


class Engine(Generic[S]):
    def __init__(self, rules: RatingSystem[S], training_rating: Points, *, encode_events: bool = True) -> None:
        self.rules = rules
        self.training_rating = training_rating
        # False: updates carry their event but not its bytes (`payload` is b""), for a caller that
        # publishes nothing (rebuild); encoding is a fifth of the engine's work.
        self.encode_events = encode_events
        self.encode = contract_of(rules).encode

    def ratings_read(self, game: GameFinished) -> tuple[str, str] | None:
        """The keys of the two ratings `apply` reads for this game, or None if it reads none."""
        return self.classify(game)[1]

    def classify(self, game: GameFinished) -> Classification:
        """The game's category (or why it changes nothing) and the keys of the ratings it reads."""
        category = self.rules.category(game)
        if isinstance(category, Skip):
            return category, None
        return category, (rating_key(game.white_id, category), rating_key(game.black_id, category))

    def apply(
        self,
        game: GameFinished,
        states: Mapping[str, S],
        known: bytes | None,
        classified: Classification | None = None,
    ) -> GameOutcome[S]:
        """What `game` does, given the states of `ratings_read(game)` and its recorded digest if
        any (`classified`: the game's `classify`, if the caller has it already)."""
        rules = self.rules
        digest = facts_digest(game, rules.facts(game))
        if known is not None:
            verdict = Verdict.DUPLICATE if known in (digest, RESTORED) else Verdict.CONFLICT
            return GameOutcome(verdict, digest, Skip.DUPLICATE if verdict is Verdict.DUPLICATE else None)
        category, keys = self.classify(game) if classified is None else classified
        if isinstance(category, Skip):
            return GameOutcome(Verdict.SKIPPED, digest, category)
        assert keys is not None  # a counted game reads two ratings
        white_key, black_key = keys
        unseen = rules.unseen
        white, black = states.get(white_key, unseen), states.get(black_key, unseen)
        rated = rules.rate_game(game, category, white, black)
        if isinstance(rated, Skip):
            return GameOutcome(Verdict.SKIPPED, digest, rated)
        return GameOutcome(Verdict.APPLIED, digest, None, self._updates(game, category, rated, white, black))

    def _updates(self, game: GameFinished, category: str, rated: Rated[S], white: S, black: S) -> tuple[Update[S], ...]:
        """One update per rating the game changed, white's first."""
        score = _WHITE_SCORE[game.result]
        updates = []
        if rated.white is not None:
            updates.append(self._game_update(game, category, rated.white, game.white_id, game.black_id, white, score))
        if rated.black is not None:
            score = Hundredths(ONE - score)
            updates.append(self._game_update(game, category, rated.black, game.black_id, game.white_id, black, score))
        return tuple(updates)

    def _game_update(
        self,
        game: GameFinished,
        category: str,
        change: Change[S],
        player_id: str,
        opponent_id: str,
        before: S,
        score: Hundredths,
    ) -> Update[S]:
        after = self.rules.numbered(change.after, before.seq + 1)
        # Positional, in RatingEvent's order (a keyword call costs more, on every update of every game):
        # event_id, game_id, source_event_id, player_id, opponent_id, category, kind, score,
        # rating_before (None for a rating that had none: the contract's null), rating_after,
        # display_before, display_after, k_factor, expected_score, state, finished_at, detail.
        event = RatingEvent(
            f"{game.game_id}/{player_id}",
            game.game_id,
            game.event_id,
            player_id,
            opponent_id,
            category,
            change.kind,
            score,
            before.rating,
            after.rating,
            self.display(before),
            self.display(after),
            change.k_factor,
            change.expected_score,
            after,
            game.finished_at,
            change.detail,
        )
        return Update(event.key, after, event, self.encode(event) if self.encode_events else b"")

    def seed(self, row: SeedRow, current: S, force: bool = False) -> SeedOutcome[S]:
        """Import a seeding row (or a rebuilt state) over `current` (contract, "Seeding"): a row
        equal to the state it has (seq aside) is skipped, a rating with state is refused unless
        forced; otherwise the row's state is written and announced by an `imported` event."""
        seeded = self.rules.seeded(row, current)  # with current's seq
        if current.seq > 0 and seeded == current:
            return SeedOutcome(SeedVerdict.UNCHANGED)
        if current.seq > 0 and not force:
            return SeedOutcome(SeedVerdict.REFUSED)
        after = self.rules.numbered(seeded, current.seq + 1)
        event = RatingEvent(
            event_id=f"import/{row.player_id}/{row.category}/{after.seq}",
            game_id=None,
            source_event_id=None,
            player_id=row.player_id,
            opponent_id=None,
            category=row.category,
            kind=Kind.IMPORTED,
            score=None,
            rating_before=current.rating if current.seq else None,  # none before any state (contract)
            rating_after=after.rating,
            display_before=self.display(current),
            display_after=self.display(after),
            k_factor=None,
            expected_score=None,
            state=after,
            finished_at=None,
            detail=self.rules.imported_detail(current),
        )
        return SeedOutcome(SeedVerdict.IMPORTED, Update(row.key, after, event, self.encode(event)))

    def display(self, state: S) -> Points:
        """The displayed rating: the official one rounded, or the training rating while unrated."""
        return self.training_rating if state.rating is None else display(state.rating)
