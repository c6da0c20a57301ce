"""The engine: the single place where a game (or a seeded rating) becomes state changes and events.

Pure: the caller loads the states and the game's idempotency record, calls the engine, and
stores what it returns. The offline replay keeps them in dicts; the streaming worker keeps
them in Redis. Both call this unchanged.
"""

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from schemas.game_finished import GameFinished
from worker.engine.events import RatingEvent, encode, rating_key
from worker.rules.categories import Category
from worker.rules.hundredths import ONE, Hundredths, Points, display
from worker.rules.state import UNSEEN, RatingState
from worker.rules.system import Change, Kind, Pairing, Rated, RatingSystem, Skip

_WHITE_SCORE = {"1-0": Hundredths(100), "1/2-1/2": Hundredths(50), "0-1": Hundredths(0)}
# The idempotency record of a game restored from the output topic (`rating-worker restore`):
# its facts are unknown, so a redelivery of that game is a duplicate whatever its facts.
RESTORED = b""


class Verdict(StrEnum):
    APPLIED = "applied"  # changed at least one rating
    SKIPPED = "skipped"  # a valid game that changes nothing (see `Skip`)
    DUPLICATE = "duplicate"  # already recorded with the same facts: nothing to do
    CONFLICT = "conflicting_duplicate"  # already recorded with other facts: dead-letter it


class Update(NamedTuple):
    """One rating's new state and the event that announces it, encoded once for good."""

    key: str
    state: RatingState
    event: RatingEvent
    payload: bytes


class GameOutcome(NamedTuple):
    verdict: Verdict
    digest: bytes  # the game's facts digest: its idempotency record, stored unless already known
    skip: Skip | None = None
    updates: tuple[Update, ...] = ()


@dataclass(frozen=True, slots=True)
class SeedRow:
    """An established rating to import (a validated seeding row); rating in hundredths."""

    player_id: str
    category: Category
    rating: Hundredths
    rated_games: int

    @property
    def key(self) -> str:
        return rating_key(self.player_id, self.category)


class SeedVerdict(StrEnum):
    IMPORTED = "imported"
    UNCHANGED = "unchanged"  # the row equals the current state: skipped
    REFUSED = "refused"  # the rating has state and the import was not forced
    MOVED = "moved"  # the rating changed since the seq the row expected (switch-over): not imported


class SeedOutcome(NamedTuple):
    verdict: SeedVerdict
    update: Update | None = None


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
Classification = tuple[Category | Skip, tuple[str, str] | None]


class Engine:
    def __init__(self, rules: RatingSystem, training_rating: Points, *, encode_events: bool = True) -> None:
        self.rules = rules
        self.training_rating = training_rating
        # False: updates carry their event but not its bytes (`payload` is b""), for a caller that
        # publishes nothing (rebuild); encoding is a fifth of the engine's work.
        self.encode_events = encode_events

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
        states: Mapping[str, RatingState],
        known: bytes | None,
        classified: Classification | None = None,
    ) -> GameOutcome:
        """What `game` does, given the states of `ratings_read(game)` and its recorded digest if
        any (`classified`: the game's `classify`, if the caller has it already)."""
        digest = facts_digest(game)
        if known is not None:
            verdict = Verdict.DUPLICATE if known in (digest, RESTORED) else Verdict.CONFLICT
            return GameOutcome(verdict, digest, Skip.DUPLICATE if verdict is Verdict.DUPLICATE else None)
        category, keys = self.classify(game) if classified is None else classified
        if isinstance(category, Skip):
            return GameOutcome(Verdict.SKIPPED, digest, category)
        assert keys is not None  # a counted game reads two ratings
        white_key, black_key = keys
        white, black = states.get(white_key, UNSEEN), states.get(black_key, UNSEEN)
        pairing = Pairing(game.game_id, game.white_id, game.black_id, _WHITE_SCORE[game.result])
        rated = self.rules.rate(pairing, category, white, black)
        if isinstance(rated, Skip):
            return GameOutcome(Verdict.SKIPPED, digest, rated)
        return GameOutcome(Verdict.APPLIED, digest, None, self._updates(game, category, rated, white, black))

    def _updates(
        self, game: GameFinished, category: Category, rated: Rated, white: RatingState, black: RatingState
    ) -> tuple[Update, ...]:
        sides = (
            (rated.white, game.white_id, game.black_id, white, _WHITE_SCORE[game.result]),
            (rated.black, game.black_id, game.white_id, black, Hundredths(ONE - _WHITE_SCORE[game.result])),
        )
        updates = []
        for change, player_id, opponent_id, before, score in sides:
            if change is None:
                continue
            updates.append(self._game_update(game, category, change, player_id, opponent_id, before, score))
        return tuple(updates)

    def _game_update(
        self,
        game: GameFinished,
        category: Category,
        change: Change,
        player_id: str,
        opponent_id: str,
        before: RatingState,
        score: Hundredths,
    ) -> Update:
        new = change.after  # constructed, not dataclasses.replace(): this is the hot path
        after = RatingState(new.rating, new.rated_games, new.qualifying, before.seq + 1)
        # Only a rated game and a lost rating have a rating before (the contract's null table).
        had_rating = change.kind in (Kind.RATED_GAME, Kind.RATING_LOST)
        event = RatingEvent(
            event_id=f"{game.game_id}/{player_id}",
            game_id=game.game_id,
            source_event_id=game.event_id,
            player_id=player_id,
            opponent_id=opponent_id,
            category=category,
            kind=change.kind,
            score=score,
            rating_before=before.rating if had_rating else None,
            rating_after=after.rating,
            display_before=self.display(before),
            display_after=self.display(after),
            k_factor=change.k_factor,
            expected_score=change.expected_score,
            state=after,
            finished_at=game.finished_at,
        )
        return Update(event.key, after, event, encode(event) if self.encode_events else b"")

    def seed(self, row: SeedRow, current: RatingState, force: bool = False) -> SeedOutcome:
        """Import an established rating over `current` (contract, "Seeding established ratings")."""
        if current.rating == row.rating and current.rated_games == row.rated_games and not current.qualifying:
            return SeedOutcome(SeedVerdict.UNCHANGED)
        if current.seq > 0 and not force:
            return SeedOutcome(SeedVerdict.REFUSED)
        after = RatingState(rating=row.rating, rated_games=row.rated_games, seq=current.seq + 1)
        event = RatingEvent(
            event_id=f"import/{row.player_id}/{row.category}/{after.seq}",
            game_id=None,
            source_event_id=None,
            player_id=row.player_id,
            opponent_id=None,
            category=row.category,
            kind=Kind.IMPORTED,
            score=None,
            rating_before=current.rating,
            rating_after=row.rating,
            display_before=self.display(current),
            display_after=self.display(after),
            k_factor=None,
            expected_score=None,
            state=after,
            finished_at=None,
        )
        return SeedOutcome(SeedVerdict.IMPORTED, Update(row.key, after, event, encode(event)))

    def display(self, state: RatingState) -> Points:
        """The displayed rating: the official one rounded, or the training rating while unrated."""
        return self.training_rating if state.rating is None else display(state.rating)
