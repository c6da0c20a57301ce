"""The worked examples of US Chess correspondence (numbered as in the tests' names) that need the input
and the engine: 24 and 25 (ordinary forfeits), 37 to 39 (`forfeit_kind` and duplicates) and 41 (games
that change nothing), each from its message through `Engine(USCF_CC)`, the expected numbers following
docs/systems/uscf-cc.md ("Rules and readings", "Input"). (42 and 43 are
tests/unit/engine/test_events_v2.py's; the rules' own examples are
tests/unit/rules/test_uscf_cc.py's.)"""

from decimal import Decimal
from typing import Any

import pytest

from schemas.correspondence_game import CorrespondenceGameFinished
from schemas.rating_changed_v2 import CcRatingChanged
from tests.support.contract import VALID_GAME
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, GameOutcome, Verdict
from worker.rules.hundredths import Hundredths, Points
from worker.rules.interface import SeedRow, Skip
from worker.systems.registry import USCF_CC
from worker.systems.uscf_cc.rules import CcState

ALICE, BOB = "alice/correspondence", "bob/correspondence"
ABSENT = object()  # forfeit_kind left out of the message


def established() -> Ratings[CcState]:
    """The tables' 1600 (E) (alice, white) and 1400 (E) (bob): 40 credits each, seeded."""
    store = Ratings(Engine(USCF_CC, Points(1200)))
    for player, rating in (("alice", 160000), ("bob", 140000)):
        assert store.seed(SeedRow(player, "correspondence", Hundredths(rating), 40)).update is not None
    return store


def game(forfeit_kind: object = ABSENT, **changes: Any) -> CorrespondenceGameFinished:
    """The contract's valid game (alice, white, beats bob), as a correspondence game."""
    value = {**VALID_GAME, "time_control": {"base_seconds": 259200, "increment_seconds": 0}, **changes}
    if forfeit_kind is not ABSENT:
        value["forfeit_kind"] = forfeit_kind
    return CorrespondenceGameFinished.model_validate(value)


def events(outcome: GameOutcome[CcState]) -> list[CcRatingChanged]:
    return [CcRatingChanged.model_validate_json(u.payload) for u in outcome.updates]


def assert_rated_as(outcome: GameOutcome[CcState], white_after: str, black_after: str) -> None:
    """Rated like examples 1 and 2: rated_game x2, K 16 / 16, one credit more each (41)."""
    assert outcome.verdict is Verdict.APPLIED
    white, black = events(outcome)
    assert (white.player_id, black.player_id) == ("alice", "bob")  # white's first
    assert (white.kind, black.kind) == ("rated_game", "rated_game")
    assert (white.rating_before, black.rating_before) == (Decimal("1600.00"), Decimal("1400.00"))
    assert (white.rating_after, black.rating_after) == (Decimal(white_after), Decimal(black_after))
    assert (white.detail.k_factor, black.detail.k_factor) == (16, 16)
    assert (white.state.rated_games, black.state.rated_games) == (41, 41)
    assert (white.seq, black.seq) == (2, 2)


@pytest.mark.parametrize("kind", [ABSENT, "ordinary"], ids=["absent", "ordinary"])
def test_example_24_an_ordinary_forfeit_win_is_rated_as_example_1(kind: object) -> None:
    store = established()
    outcome = store.apply(game(kind, termination="forfeit"))
    assert_rated_as(outcome, "1608.00", "1392.00")
    assert store.states[ALICE] == CcState(Hundredths(160800), 41, 2)
    assert store.states[BOB] == CcState(Hundredths(139200), 41, 2)


@pytest.mark.parametrize("kind", [ABSENT, "ordinary"], ids=["absent", "ordinary"])
def test_example_25_a_drawn_ordinary_forfeit_is_rated_as_example_2(kind: object) -> None:
    store = established()
    outcome = store.apply(game(kind, termination="forfeit", result="1/2-1/2"))
    assert_rated_as(outcome, "1592.00", "1408.00")
    assert [e.score for e in events(outcome)] == [Decimal("0.5"), Decimal("0.5")]
    assert store.states[ALICE] == CcState(Hundredths(159200), 41, 2)
    assert store.states[BOB] == CcState(Hundredths(140800), 41, 2)


def test_example_37_a_resignation_marked_special_is_rated_normally_and_its_kind_is_no_fact() -> None:
    store = established()
    assert_rated_as(store.apply(game("special", termination="resignation")), "1608.00", "1392.00")
    states = dict(store.states)
    again = store.apply(game(termination="resignation"))  # the redelivery, without forfeit_kind
    assert again.verdict is Verdict.DUPLICATE and again.skip is Skip.DUPLICATE
    assert again.updates == () and store.states == states
    # The other way round too: the kind is no fact of a resignation.
    store = established()
    assert_rated_as(store.apply(game(termination="resignation")), "1608.00", "1392.00")
    assert store.apply(game("special", termination="resignation")).verdict is Verdict.DUPLICATE


@pytest.mark.parametrize(("first", "second"), [(ABSENT, "ordinary"), ("ordinary", ABSENT)], ids=["added", "dropped"])
def test_example_38_an_absent_forfeit_kind_is_ordinary(first: object, second: object) -> None:
    store = established()
    assert_rated_as(store.apply(game(first, termination="forfeit")), "1608.00", "1392.00")
    states = dict(store.states)
    again = store.apply(game(second, termination="forfeit"))
    assert again.verdict is Verdict.DUPLICATE
    assert again.updates == () and store.states == states


@pytest.mark.parametrize(
    ("first", "second"),
    [("ordinary", "special"), (ABSENT, "special"), ("special", "ordinary"), ("special", ABSENT)],
    ids=["ordinary-special", "absent-special", "special-ordinary", "special-absent"],
)
def test_example_39_a_forfeits_other_kind_is_a_conflicting_duplicate(first: object, second: object) -> None:
    store = established()
    assert store.apply(game(first, termination="forfeit")).verdict is Verdict.APPLIED
    states, records = dict(store.states), dict(store.games)
    again = store.apply(game(second, termination="forfeit"))
    assert again.verdict is Verdict.CONFLICT
    assert again.updates == ()
    assert store.states == states and store.games == records


@pytest.mark.parametrize(
    ("changes", "skip"),
    [
        ({"rated": False}, Skip.RATED_FALSE),
        ({"termination": "aborted"}, Skip.ABORTED),
        # Section 4's order: rated: false (step 3) before aborted (4) before a special forfeit (5).
        ({"rated": False, "termination": "aborted"}, Skip.RATED_FALSE),
        ({"rated": False, "termination": "forfeit", "forfeit_kind": "special"}, Skip.RATED_FALSE),
        ({"rated": False, "termination": "forfeit", "result": "1/2-1/2"}, Skip.RATED_FALSE),
        ({"termination": "aborted", "forfeit_kind": "special"}, Skip.ABORTED),
        ({"termination": "aborted", "result": "1/2-1/2"}, Skip.ABORTED),
    ],
    ids=[
        "rated-false",
        "aborted",
        "both",
        "rated-false-special",
        "rated-false-drawn-forfeit",
        "aborted-special",
        "aborted-draw",
    ],
)
def test_example_41_an_unrated_or_aborted_game_changes_nothing_and_is_recorded(
    changes: dict[str, Any], skip: Skip
) -> None:
    changes = dict(changes)
    kind = changes.pop("forfeit_kind", ABSENT)
    for store in (established(), Ratings(Engine(USCF_CC, Points(1200)))):  # rated players, and unrated ones
        states = dict(store.states)
        outcome = store.apply(game(kind, **changes))
        assert outcome.verdict is Verdict.SKIPPED
        assert outcome.skip is skip
        assert outcome.updates == ()
        assert store.states == states
        # Still recorded for duplicate detection (section 4): the redelivery is a duplicate.
        assert store.apply(game(kind, **changes)).verdict is Verdict.DUPLICATE
