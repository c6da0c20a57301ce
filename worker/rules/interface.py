"""The interface between the engine and a rating system.

The engine owns everything that is the same for any system: duplicates, sequence numbers,
event ids, the order of a game's events, and the seeding policy (a row equal to the state is
skipped, a rating with state is refused unless forced). A rating system owns the rest, and
nothing of Kafka, Redis or the event encoding:

- its input: the model its games are decoded with (`game_model`) and the facts beside v1's
  that make a redelivery the same game (`facts`);
- its state: a value with a `rating` (None while unrated) and a `seq`, its never-seen value
  (`unseen`) and how a state is numbered (`numbered`);
- its arithmetic: which games count in which category (`category`) and what a counted game
  does to the two ratings involved (`rate_game`): a `Change` per rating it changes;
- its seeding rows: their header and syntax (`parse_seed_row`), the state a row gives
  (`seeded`) and the row that imports a rebuilt state (`row_of`, for `switch-over`);
- the values its metrics and events take (`categories`, `kinds`, `skips`), and which kinds
  of change always come in pairs (`paired_kinds`: a game that made one made the other player's
  too, which `restore` checks).

The arena's rules (`worker.systems.arena.rules`), US Chess correspondence (`worker.systems.uscf_cc.rules`) and
Glicko-2 (`worker.systems.glicko2.rules`) implement it. A per-period system (FIDE, Tornelo: one change
per rating period from the sum of its games) implements the second entry point of
`worker.rules.period_interface` beside it.
"""

from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, NamedTuple, Protocol

from typing_extensions import TypeVar  # a TypeVar with a default (PEP 696, typing's own from 3.13)

from schemas.game_finished import GameFinished
from worker.rules.hundredths import ONE, Hundredths


class Skip(StrEnum):
    """Why a valid game changed nothing, for every system (each lists its own in `skips`). The
    values are metric labels: do not rename."""

    RATED_FALSE = "rated_false"
    UNRATED_TIME_CONTROL = "unrated_time_control"
    FORFEIT = "forfeit"
    ABORTED = "aborted"
    BOTH_UNRATED = "both_unrated"
    NOT_COUNTED = "not_counted"  # an unrated player's loss before his count starts
    FORFEIT_UNRATED_WINNER = "forfeit_unrated_winner"  # uscf-cc: a special forfeit won by an unrated player
    NOT_CONVERGED = "not_converged"  # glicko2: the volatility's iteration failed for a player
    DUPLICATE = "duplicate"  # decided by the engine, never by a rating system


class Kind(StrEnum):
    """What happened to one rating, for every system (each lists its own in `kinds`); the `kind`
    field of the output event."""

    RATED_GAME = "rated_game"
    QUALIFYING_GAME = "qualifying_game"
    FIRST_RATING = "first_rating"
    QUALIFICATION_RESET = "qualification_reset"
    RATING_LOST = "rating_lost"
    GAME_CREDIT = "game_credit"  # uscf-cc: the rating unchanged, one game credit more
    FORFEIT_WIN = "forfeit_win"  # uscf-cc: a special forfeit's points for its winner
    PERIOD_GAME = "period_game"  # fide, tornelo: a game recorded in its rating period, no rating changed
    PERIOD_RATING = "period_rating"  # fide, tornelo: a period's change (tornelo: also a game rated at once)
    PROVISIONAL_RATING = "provisional_rating"  # tornelo: a performance rating over fewer than 20 games
    PERIOD_CLOSED = "period_closed"  # fide, tornelo: a period closed without changing the rating
    IMPORTED = "imported"


class State(Protocol):
    """What the engine reads of any system's state: its rating (None while unrated) and its
    version (every change raises `seq` by one; only the engine advances it)."""

    @property
    def rating(self) -> Hundredths | None: ...

    @property
    def seq(self) -> int: ...


# A system's state; any system's (only what `State` says) where a type does not say.
S = TypeVar("S", bound=State, default=State)


class Change(NamedTuple, Generic[S]):
    """What a game did to one rating. `after.seq` is the state's old seq: the engine numbers changes.
    `k_factor`, `expected_score` and `detail` (the system's own values, which only its contract
    reads) are the event's detail, where the system's contract has them."""

    kind: Kind
    after: S
    k_factor: int | None = None
    expected_score: Hundredths | None = None  # PD, E
    detail: object = None


class Pairing(NamedTuple):
    """The facts of a counted game that the arena's rules read."""

    game_id: str
    white_id: str
    black_id: str
    white_score: Hundredths  # 100, 50 or 0

    @property
    def black_score(self) -> Hundredths:
        return Hundredths(ONE - self.white_score)


class Rated(NamedTuple, Generic[S]):
    """The changes of a counted game; None for a player whose rating it leaves alone (no event)."""

    white: Change[S] | None
    black: Change[S] | None


@dataclass(frozen=True, slots=True)
class SeedRow:
    """A validated seeding row (or a rebuilt state to import): a rating in hundredths (None only
    where the system imports an unrated state) and its count (`rated_games`: the arena's rated
    games, uscf-cc's game credits)."""

    player_id: str
    category: str
    rating: Hundredths | None
    rated_games: int
    extra: tuple[object, ...] = ()  # the system's own fields (glicko2: deviation, volatility, last_rated_at)

    @property
    def key(self) -> str:
        return f"{self.player_id}/{self.category}"


class RatingSystem(Protocol[S]):
    @property
    def name(self) -> str: ...  # RATING_SYSTEM

    @property
    def game_model(self) -> type[GameFinished]: ...  # its input: v1's game, or v1 with its own fields

    @property
    def unseen(self) -> S: ...  # the state of a rating never seen

    @property
    def categories(self) -> tuple[str, ...]: ...

    @property
    def kinds(self) -> tuple[Kind, ...]: ...

    @property
    def skips(self) -> tuple[Skip, ...]: ...

    @property
    def paired_kinds(self) -> frozenset[Kind]: ...

    @property
    def seed_header(self) -> tuple[str, ...]: ...

    @property
    def fact_names(self) -> str: ...  # the facts of a game, for the message of a conflicting duplicate

    def category(self, game: GameFinished) -> str | Skip:
        """The category whose ratings the game may change, or why it changes none."""
        ...

    def rate_game(self, game: GameFinished, category: str, white: S, black: S) -> Rated[S] | Skip:
        """What the game does to the two players' states in `category` (pure)."""
        ...

    def facts(self, game: GameFinished) -> str:
        """The system's facts beside v1's that make a redelivery the same game ("" for none)."""
        ...

    def refuse(self, game: GameFinished, record_ms: int | None, allowance_seconds: int) -> str | None:
        """Why a valid game of the model is bad input all the same, by what the model cannot
        see (its record's timestamp in ms, None without one), or None: the message of its
        `invalid_schema` dead letter."""
        ...

    def numbered(self, state: S, seq: int) -> S:
        """`state` with `seq`."""
        ...

    def parse_seed_row(self, fields: list[str]) -> SeedRow:
        """One row of the system's seeding file; ValueError("field: why") if it is invalid."""
        ...

    def seeded(self, row: SeedRow, current: S) -> S:
        """The state a row gives over `current` (with `current`'s seq: the engine numbers it)."""
        ...

    def row_of(self, player_id: str, category: str, state: S) -> SeedRow | None:
        """The row that imports `state` (a rebuilt one, `switch-over`), or None if the system's
        contract cannot import it."""
        ...

    def imported_detail(self, current: S) -> object:
        """The detail of an `imported` event over `current`, for the system's contract (None)."""
        ...
