"""Contract v2's `uscf-cc` events, byte for byte: the contract's examples (alice and bob seeded,
then g1), computed by the rules and encoded; one golden event per kind written out by hand from
the contract's tables (a first rating, a game credit, a forfeit win, a negative rating, an
import over a state)."""

import json

from tests.support.v2_examples import CONTRACT_USCF_CC
from worker.engine.events_v2 import CcEvent, encode_cc, game_event, imported_event
from worker.rules.hundredths import Hundredths, Points
from worker.rules.uscf_cc import LOSS, WIN, CcGame, CcKind, CcRated, CcSeed, CcState, rate

TRAINING = Points(1200)


def test_the_contracts_example_42_byte_for_byte() -> None:
    alice_seed, bob_seed = CcSeed("alice", Hundredths(160000), 40), CcSeed("bob", Hundredths(140000), 10)
    imported = imported_event(alice_seed, CcState(), TRAINING)
    alice = imported.state
    bob = imported_event(bob_seed, CcState(), TRAINING).state
    rated = rate(CcGame(WIN), alice, bob)
    assert isinstance(rated, CcRated) and rated.white and rated.black
    args = ("g1", "ev-1", "2026-11-29T12:00:00Z")
    white = game_event(*args, "alice", "bob", WIN, alice, rated.white, TRAINING)
    black = game_event(*args, "bob", "alice", LOSS, bob, rated.black, TRAINING)
    assert [encode_cc(imported), encode_cc(white), encode_cc(black)] == CONTRACT_USCF_CC
    assert (white.key, black.key) == ("alice/correspondence", "bob/correspondence")


def event(kind: CcKind, before: int | None, after: int | None, credits: int, k: int | None, **more: object) -> CcEvent:
    fields: dict[str, object] = {
        "event_id": "g7/x",
        "game_id": "g7",
        "source_event_id": "e-7",
        "player_id": "x",
        "opponent_id": "y",
        "kind": kind,
        "score": Hundredths(100),
        "rating_before": None if before is None else Hundredths(before),
        "state": CcState(None if after is None else Hundredths(after), credits, 5),
        "finished_at": "2026-11-29T12:00:00.5+01:00",
        "k_factor": k,
        "training_rating": TRAINING,
    }
    fields.update(more)
    return CcEvent(**fields)  # type: ignore[arg-type]


def test_one_golden_event_per_kind_written_from_the_contract() -> None:
    head = '{"event_id":"g7/x","system":"uscf-cc","game_id":"g7","source_event_id":"e-7","player_id":"x",'
    head += '"opponent_id":"y","category":"correspondence",'
    tail = '"finished_at":"2026-11-29T12:00:00.5+01:00",'
    no_k = tail + '"detail":{"k_factor":null}}'
    goldens = {
        # first_rating: rating_before null (display: the training rating), delta null, k null.
        event(CcKind.FIRST_RATING, None, -10000, 1, None): head + '"kind":"first_rating","score":1,'
        '"rating_before":null,"rating_after":-100.00,"display_before":1200,"display_after":-100,"delta":null,'
        '"seq":5,"state":{"rating":-100.00,"rated_games":1,"seq":5},' + no_k,
        # game_credit: rating unchanged, delta 0.00.
        event(CcKind.GAME_CREDIT, 175000, 175000, 3, None, score=Hundredths(0)): head + '"kind":"game_credit",'
        '"score":0,"rating_before":1750.00,"rating_after":1750.00,"display_before":1750,"display_after":1750,'
        '"delta":0.00,"seq":5,"state":{"rating":1750.00,"rated_games":3,"seq":5},'
        + tail
        + '"detail":{"k_factor":null}}',
        # forfeit_win: points as delta, K of Ro.
        event(CcKind.FORFEIT_WIN, 209500, 209765, 40, 16): head + '"kind":"forfeit_win","score":1,'
        '"rating_before":2095.00,"rating_after":2097.65,"display_before":2095,"display_after":2098,"delta":2.65,'
        '"seq":5,"state":{"rating":2097.65,"rated_games":40,"seq":5},' + tail + '"detail":{"k_factor":16}}',
        # a draw's score, and displays of ratings at .50: upwards (2149.50 -> 2150, 2150.50 -> 2151).
        event(CcKind.RATED_GAME, 214950, 215050, 41, 12, score=Hundredths(50)): head + '"kind":"rated_game",'
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
    forced = imported_event(CcSeed("alice", Hundredths(165000), 41), before, TRAINING)
    assert encode_cc(forced) == (
        b'{"event_id":"import/alice/correspondence/3","system":"uscf-cc","game_id":null,"source_event_id":null,'
        b'"player_id":"alice","opponent_id":null,"category":"correspondence","kind":"imported","score":null,'
        b'"rating_before":1608.00,"rating_after":1650.00,"display_before":1608,"display_after":1650,"delta":42.00,'
        b'"seq":3,"state":{"rating":1650.00,"rated_games":41,"seq":3},"finished_at":null,"detail":{"k_factor":null}}'
    )


def test_a_source_event_id_is_escaped_as_the_contract_says() -> None:
    odd = event(CcKind.GAME_CREDIT, 100, 100, 1, None, source_event_id='a"b\\c\x01\x7fé')
    assert b'"source_event_id":"a\\"b\\\\c\\u0001\x7f\xc3\xa9"' in encode_cc(odd)
