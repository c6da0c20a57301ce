"""The engine: the single place where a game (or a seeded rating) becomes state changes and events.

Pure: the caller loads the states and the game's idempotency record, calls the engine, and
stores what it returns. The offline replay keeps them in dicts; the streaming worker keeps
them in Redis. Both call this unchanged, for every rating system: the system's rules
(`worker.rules.interface.RatingSystem`) say what a game does to a rating, the engine does the
rest (duplicates, sequence numbers, event ids, the seeding policy) and has the system's
contract (`worker.engine.contracts`) encode each event once.

A per-period system (`worker.rules.period_interface.PeriodSystem`: `fide`, `tornelo`) records its
games in their period and changes ratings when a period closes. For it the engine also owns,
the same for each: the close events (`close`: event id `period/{P}/{player}/{category}`, the
next `seq`, null game fields), their order (a close's ratings in the byte order of their keys:
`close_order`), and the rule that a rating still holding games of a closed period is closed
before anything else happens to it: `apply` first closes each player of the game for every
closed period he still holds (white's closes, then black's, each oldest first), then applies
the game to the closed states. The calendar (what is closed) and the states of other ratings
(`lookup`: fide counts a held game with its opponent's list rating) are the caller's.
"""

import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping
from enum import StrEnum
from typing import Generic, NamedTuple

from schemas.game_finished import GameFinished
from worker.engine.events import RatingEvent, rating_key
from worker.engine.spec import SystemSpec
from worker.rules.hundredths import ONE, Hundredths, Points
from worker.rules.interface import Change, Kind, Rated, RatingSystem, S, SeedRow, Skip
from worker.rules.period_interface import Calendar, PeriodSystem

__all__ = [
    "RESTORED",
    "CloseOutcome",
    "Engine",
    "GameOutcome",
    "SeedOutcome",
    "SeedRow",
    "SeedVerdict",
    "Update",
    "Verdict",
]

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
    # A per-period system's game whose own period was closed already: recorded in another (fide: the
    # oldest open month) or rated at once, not where a calendar with nothing closed would put it.
    late: bool = False


class CloseOutcome(NamedTuple, Generic[S]):
    """The close of one rating for a period: its close event, or None if it held no game of it
    (closed already, by an earlier run of the close or by its next game)."""

    update: Update[S] | None


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
    def __init__(self, spec: SystemSpec[S], training_rating: Points, *, encode_events: bool = True) -> None:
        self.spec = spec
        self.rules: RatingSystem[S] = spec.rules
        self.training_rating = training_rating
        # False: updates carry their event but not its bytes (`payload` is b""), for a caller that
        # publishes nothing (rebuild); encoding is a fifth of the engine's work.
        self.encode_events = encode_events
        self.encode = spec.contract.encode
        # The per-period entry point of the rules, or None for a system that rates game by game.
        self.periods: PeriodSystem[S] | None = spec.periods

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
        calendar: Calendar = None,
        lookup: Callable[[str], S] | None = None,
    ) -> GameOutcome[S]:
        """What `game` does, given the states of `ratings_read(game)` and its recorded digest if
        any (`classified`: the game's `classify`, if the caller has it already). A per-period
        system also reads what is closed (`calendar`; None: nothing) and, to close a player who
        held games of a closed period, other ratings' states (`lookup`; default: `states`)."""
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
        if self.periods is not None:
            get = (lambda key: states.get(key, unseen)) if lookup is None else lookup
            return self._apply_in_period(game, category, keys, digest, white, black, calendar, get)
        rated = rules.rate_game(game, category, white, black)
        if isinstance(rated, Skip):
            return GameOutcome(Verdict.SKIPPED, digest, rated)
        return GameOutcome(Verdict.APPLIED, digest, None, self._updates(game, category, rated, white, black, keys))

    def _apply_in_period(
        self,
        game: GameFinished,
        category: str,
        keys: tuple[str, str],
        digest: bytes,
        white: S,
        black: S,
        calendar: Calendar,
        lookup: Callable[[str], S],
    ) -> GameOutcome[S]:
        """A per-period system's game: each player first closed for the closed periods he still
        holds (white's closes, then black's), then the game recorded in its period, or rated at
        once where it has none (`recorded_in`), on the closed states; `late` if that is not where a
        calendar with nothing closed would put it (its own period is closed)."""
        periods = self.periods
        assert periods is not None
        if calendar is None:
            calendar = periods.opening
        closes: list[Update[S]] = []
        white_key, black_key = keys
        white = self._closed(white_key, game.white_id, category, white, calendar, lookup, closes)
        black = self._closed(black_key, game.black_id, category, black, calendar, lookup, closes)
        period = periods.recorded_in(game, calendar)
        if period is None:
            rated = periods.rate_game(game, category, white, black)
        else:
            rated = periods.record(game, category, period, calendar, white, black)
        if isinstance(rated, Skip):
            return (
                GameOutcome(Verdict.APPLIED, digest, None, tuple(closes))
                if closes
                else GameOutcome(Verdict.SKIPPED, digest, rated)
            )
        late = calendar != periods.opening and period != periods.recorded_in(game, periods.opening)
        updates = (*closes, *self._updates(game, category, rated, white, black, keys))
        return GameOutcome(Verdict.APPLIED, digest, None, updates, late)

    def _closed(
        self,
        key: str,
        player_id: str,
        category: str,
        state: S,
        calendar: Calendar,
        lookup: Callable[[str], S],
        out: list[Update[S]],
    ) -> S:
        """The state closed for every closed period it holds, in closing order; the close events in `out`."""
        periods = self.periods
        assert periods is not None
        for period in periods.closing(state, calendar):
            change = periods.close(period, category, state, lookup)
            update = self._close_update(period, key, player_id, category, state, change)
            out.append(update)
            state = update.state
        return state

    def close(self, period: str, key: str, state: S, lookup: Callable[[str], S]) -> CloseOutcome[S]:
        """Close `period` for the rating `key` (a close line of `rate`; later `close-period`): its
        close event, or none if it holds no game of `period`. `lookup` gives other ratings' states."""
        periods = self.periods
        assert periods is not None, f"{self.rules.name} has no rating periods"
        if period not in periods.pending(state):
            return CloseOutcome(None)
        player_id, _, category = key.partition("/")
        change = periods.close(period, category, state, lookup)
        return CloseOutcome(self._close_update(period, key, player_id, category, state, change))

    def _close_update(
        self, period: str, key: str, player_id: str, category: str, before: S, change: Change[S]
    ) -> Update[S]:
        after = self.rules.numbered(change.after, before.seq + 1)
        event = RatingEvent(
            f"period/{period}/{player_id}/{category}",
            None,  # game_id, source_event_id, opponent_id, score: a close has none
            None,
            player_id,
            None,
            category,
            change.kind,
            None,
            before.rating,
            after.rating,
            self.display(before),
            self.display(after),
            None,
            None,
            after,
            None,  # finished_at
            change.detail,
        )
        return Update(key, after, event, self.encode(event) if self.encode_events else b"")

    def marks(self, calendar: Calendar, period: str, recorded: Collection[str]) -> tuple[str, ...]:
        """The periods a close of `period` marks closed, in the order they are marked and closed,
        given the periods with recorded games (each is marked once the one before is closed)."""
        assert self.periods is not None, f"{self.rules.name} has no rating periods"
        return self.periods.to_mark(calendar, period, recorded)

    def marked(self, calendar: Calendar, period: str) -> Calendar:
        """The calendar once `period` is marked closed."""
        assert self.periods is not None, f"{self.rules.name} has no rating periods"
        return self.periods.marked(calendar, period)

    @staticmethod
    def close_order(keys: Iterable[str]) -> list[str]:
        """The order in which a period's ratings are closed: the byte order of their keys
        `{player_id}/{category}` as UTF-8 (docs/contract-v2.md, "The per-period systems",
        "Order")."""
        return sorted(keys, key=str.encode)

    def _updates(
        self, game: GameFinished, category: str, rated: Rated[S], white: S, black: S, keys: tuple[str, str]
    ) -> tuple[Update[S], ...]:
        """One update per rating the game changed, white's first (`keys`: white's and black's)."""
        score = _WHITE_SCORE[game.result]
        white_id, black_id = game.white_id, game.black_id
        updates = []
        if rated.white is not None:
            updates.append(self._game_update(game, category, rated.white, keys[0], white_id, black_id, white, score))
        if rated.black is not None:
            score = Hundredths(ONE - score)
            updates.append(self._game_update(game, category, rated.black, keys[1], black_id, white_id, black, score))
        return tuple(updates)

    def _game_update(
        self,
        game: GameFinished,
        category: str,
        change: Change[S],
        key: str,
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
        return Update(key, after, event, self.encode(event) if self.encode_events else b"")

    def seed(
        self, row: SeedRow, current: S, force: bool = False, calendar: Calendar = None, whole: bool = False
    ) -> SeedOutcome[S]:
        """Import a seeding row (or a rebuilt state) over `current` (contract, "Seeding"): a row
        equal to the state it has (seq aside) is skipped, a rating with state is refused unless
        forced; otherwise the row's state is written and announced by an `imported` event. A
        per-period system's rating is refused, forced or not, while it holds games of a period
        the calendar has closed (its close comes before anything else happens to it), or where
        the system says (`seedable`), unless the row is a rebuilt state `whole` (a switch-over's:
        its own games not closed yet, and its opponents', were counted with the rebuilt ratings)."""
        seeded = self.rules.seeded(row, current)  # with current's seq
        if current.seq > 0 and seeded == current:
            return SeedOutcome(SeedVerdict.UNCHANGED)
        if current.seq > 0 and not force:
            return SeedOutcome(SeedVerdict.REFUSED)
        periods = self.periods
        if periods is not None:
            now = periods.opening if calendar is None else calendar
            if periods.closing(current, now) or not (whole or periods.seedable(current)):  # fide: games counted
                return SeedOutcome(SeedVerdict.REFUSED)  # with its list rating
            if whole and periods.closing(seeded, now):  # a rebuilt state holding a period closed since the rebuild
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
        """The displayed rating: the official one rounded, or the training rating while unrated.
        `hundredths.display` inline (two per event, the hot path; a unit test holds them equal)."""
        rating = state.rating
        return self.training_rating if rating is None else Points((2 * rating + ONE) // (2 * ONE))
