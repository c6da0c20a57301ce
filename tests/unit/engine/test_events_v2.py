"""Contract v2's `uscf-cc` events, byte for byte: the contract's examples (alice and bob seeded,
then g1), computed by the engine with the rules and encoded; one golden event per kind written out
by hand from the contract's tables (a first rating, a game credit, a forfeit win, a negative
rating, an import over a state)."""

import json

from schemas.correspondence_game import CorrespondenceGameFinished
from tests.support.contract import VALID_GAME
from tests.support.v2_examples import CONTRACT_USCF_CC
from worker.engine.engine import Engine, SeedVerdict, Verdict
from worker.engine.events import RatingEvent
from worker.rules.hundredths import Hundredths, Points
from worker.rules.interface import Kind, SeedRow
from worker.systems.registry import USCF_CC
from worker.systems.uscf_cc.events import encode_cc
from worker.systems.uscf_cc.rules import CcState

TRAINING = Points(1200)
ENGINE = Engine(USCF_CC, TRAINING)


def test_the_contracts_example_42_byte_for_byte() -> None:
    alice_seed = SeedRow("alice", "correspondence", Hundredths(160000), 40)
    bob_seed = SeedRow("bob", "correspondence", Hundredths(140000), 10)
    imported, bob_imported = ENGINE.seed(alice_seed, CcState()), ENGINE.seed(bob_seed, CcState())
    assert imported.verdict is bob_imported.verdict is SeedVerdict.IMPORTED
    assert imported.update is not None and bob_imported.update is not None
    states = {"alice/correspondence": imported.update.state, "bob/correspondence": bob_imported.update.state}
    g1 = CorrespondenceGameFinished.model_validate({**VALID_GAME, "finished_at": "2026-11-29T12:00:00Z"})
    outcome = ENGINE.apply(g1, states, None)
    assert outcome.verdict is Verdict.APPLIED
    white, black = outcome.updates
    assert [imported.update.payload, white.payload, black.payload] == CONTRACT_USCF_CC
    assert (white.key, black.key) == ("alice/correspondence", "bob/correspondence")


def event(
    kind: Kind, before: int | None, after: int | None, credits: int, k: int | None, **more: object
) -> RatingEvent[CcState]:
    """An event as the engine makes them: displays of the ratings (the training rating for none)."""
    shown = [TRAINING if r is None else Points((r + 50) // 100) for r in (before, after)]
    fields: dict[str, object] = {
        "event_id": "g7/x",
        "game_id": "g7",
        "source_event_id": "e-7",
        "player_id": "x",
        "opponent_id": "y",
        "category": "correspondence",
        "kind": kind,
        "score": Hundredths(100),
        "rating_before": None if before is None else Hundredths(before),
        "rating_after": None if after is None else Hundredths(after),
        "display_before": shown[0],
        "display_after": shown[1],
        "k_factor": k,
        "expected_score": None,
        "state": CcState(None if after is None else Hundredths(after), credits, 5),
        "finished_at": "2026-11-29T12:00:00.5+01:00",
    }
    fields.update(more)
    return RatingEvent(**fields)  # type: ignore[arg-type]


def test_one_golden_event_per_kind_written_from_the_contract() -> None:
    head = '{"event_id":"g7/x","system":"uscf-cc","game_id":"g7","source_event_id":"e-7","player_id":"x",'
    head += '"opponent_id":"y","category":"correspondence",'
    tail = '"finished_at":"2026-11-29T12:00:00.5+01:00",'
    no_k = tail + '"detail":{"k_factor":null}}'
    goldens = {
        # first_rating: rating_before null (display: the training rating), delta null, k null.
        event(Kind.FIRST_RATING, None, -10000, 1, None): head + '"kind":"first_rating","score":1,'
        '"rating_before":null,"rating_after":-100.00,"display_before":1200,"display_after":-100,"delta":null,'
        '"seq":5,"state":{"rating":-100.00,"rated_games":1,"seq":5},' + no_k,
        # game_credit: rating unchanged, delta 0.00.
        event(Kind.GAME_CREDIT, 175000, 175000, 3, None, score=Hundredths(0)): head + '"kind":"game_credit",'
        '"score":0,"rating_before":1750.00,"rating_after":1750.00,"display_before":1750,"display_after":1750,'
        '"delta":0.00,"seq":5,"state":{"rating":1750.00,"rated_games":3,"seq":5},'
        + tail
        + '"detail":{"k_factor":null}}',
        # forfeit_win: points as delta, K of Ro.
        event(Kind.FORFEIT_WIN, 209500, 209765, 40, 16): head + '"kind":"forfeit_win","score":1,'
        '"rating_before":2095.00,"rating_after":2097.65,"display_before":2095,"display_after":2098,"delta":2.65,'
        '"seq":5,"state":{"rating":2097.65,"rated_games":40,"seq":5},' + tail + '"detail":{"k_factor":16}}',
        # a draw's score, and displays of ratings at .50: upwards (2149.50 -> 2150, 2150.50 -> 2151).
        event(Kind.RATED_GAME, 214950, 215050, 41, 12, score=Hundredths(50)): head + '"kind":"rated_game",'
        '"score":0.5,"rating_before":2149.50,"rating_after":2150.50,"display_before":2150,"display_after":2151,'
        '"delta":1.00,"seq":5,"state":{"rating":2150.50,"rated_games":41,"seq":5},'
        + tail
        + '"detail":{"k_factor":12}}',
    }
    for built, golden in goldens.items():
        assert encode_cc(built) == golden.encode()
        json.loads(golden)  # and it is JSON


def test_an_import_over_a_state_carries_the_previous_rating() -> None:
    """Example 43: alice at 1608.00 (seq 2) forced to 1650.00: seq 3, rating_before 1608.00, delta 42.00."""
    before = CcState(Hundredths(160800), 41, 2)
    row = SeedRow("alice", "correspondence", Hundredths(165000), 41)
    assert ENGINE.seed(row, before).verdict is SeedVerdict.REFUSED  # not forced
    assert ENGINE.seed(SeedRow("alice", "correspondence", Hundredths(160800), 41), before, True).update is None
    forced = ENGINE.seed(row, before, force=True).update
    assert forced is not None and forced.payload == (
        b'{"event_id":"import/alice/correspondence/3","system":"uscf-cc","game_id":null,"source_event_id":null,'
        b'"player_id":"alice","opponent_id":null,"category":"correspondence","kind":"imported","score":null,'
        b'"rating_before":1608.00,"rating_after":1650.00,"display_before":1608,"display_after":1650,"delta":42.00,'
        b'"seq":3,"state":{"rating":1650.00,"rated_games":41,"seq":3},"finished_at":null,"detail":{"k_factor":null}}'
    )


def test_a_source_event_id_is_escaped_as_the_contract_says() -> None:
    odd = event(Kind.GAME_CREDIT, 100, 100, 1, None, source_event_id='a"b\\c\x01\x7fé')
    assert b'"source_event_id":"a\\"b\\\\c\\u0001\x7f\xc3\xa9"' in encode_cc(odd)
