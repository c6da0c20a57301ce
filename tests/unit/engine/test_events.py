"""Golden payloads: one event of each kind written by hand, byte for byte from docs/contract.md
("Encoding": compact UTF-8 JSON, keys in table order, state keys status, rating, rated_games,
qualifying, seq; two decimals for ratings, delta, opponent_rating and expected_score; score as
1, 0.5 or 0; finished_at verbatim), compared with what the engine produces.
"""

import json

import pytest

from schemas.game_finished import GameFinished
from schemas.rating_changed import RatingChanged
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, SeedRow, SeedVerdict, Update, Verdict
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths, Points
from worker.systems.arena.state import RatingState
from worker.systems.registry import ARENA

FINISHED_AT = "2026-11-29T22:00:00.123+01:00"  # an offset and milliseconds: copied verbatim


def new_store() -> Ratings[RatingState]:
    return Ratings(Engine(ARENA, training_rating=Points(1200)))


def seed(
    store: Ratings[RatingState], player: str, rating: int, rated_games: int = 40, force: bool = False
) -> Update[RatingState]:
    outcome = store.seed(SeedRow(player, Category.BLITZ, Hundredths(rating), rated_games), force=force)
    assert outcome.verdict == SeedVerdict.IMPORTED
    assert outcome.update is not None
    return outcome.update


def play(
    store: Ratings[RatingState], game_id: str, white: str, black: str, result: str, event_id: str = ""
) -> dict[str, bytes]:
    game = GameFinished.model_validate_json(
        json.dumps(
            {
                "event_id": event_id or f"ev-{game_id}",
                "game_id": game_id,
                "finished_at": FINISHED_AT,
                "rated": True,
                "time_control": {"base_seconds": 180, "increment_seconds": 0},  # 3+0: blitz
                "white_id": white,
                "black_id": black,
                "result": result,
                "termination": "checkmate",
            },
            ensure_ascii=False,
        ).encode()
    )
    outcome = store.apply(game)
    assert outcome.verdict == Verdict.APPLIED
    return {u.event.player_id: u.payload for u in outcome.updates}


def conforms(payload: bytes) -> bytes:
    RatingChanged.model_validate_json(payload)
    return payload


# --- imported ------------------------------------------------------------------------------


def test_imported_of_an_unseen_rating_is_encoded_byte_for_byte() -> None:
    store = new_store()
    payload = seed(store, "alice", 180000).payload
    assert conforms(payload) == (
        b'{"event_id":"import/alice/blitz/1","game_id":null,"source_event_id":null,"player_id":"alice",'
        b'"opponent_id":null,"category":"blitz","kind":"imported","score":null,"rating_before":null,'
        b'"rating_after":1800.00,"display_before":1200,"display_after":1800,"delta":null,"k_factor":null,'
        b'"expected_score":null,"seq":1,'
        b'"state":{"status":"rated","rating":1800.00,"rated_games":40,"qualifying":[],"seq":1},'
        b'"finished_at":null}'
    )


def test_imported_over_a_rating_is_encoded_with_rating_before_and_delta() -> None:
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    play(store, "g1", "alice", "bob", "1-0")  # alice 1807.20, 41 games, seq 2
    payload = seed(store, "alice", 200000, rated_games=0, force=True).payload
    # delta = 2000.00 - 1807.20 = 192.80.
    assert conforms(payload) == (
        b'{"event_id":"import/alice/blitz/3","game_id":null,"source_event_id":null,"player_id":"alice",'
        b'"opponent_id":null,"category":"blitz","kind":"imported","score":null,"rating_before":1807.20,'
        b'"rating_after":2000.00,"display_before":1807,"display_after":2000,"delta":192.80,"k_factor":null,'
        b'"expected_score":null,"seq":3,'
        b'"state":{"status":"rated","rating":2000.00,"rated_games":0,"qualifying":[],"seq":3},'
        b'"finished_at":null}'
    )


# --- rated_game ------------------------------------------------------------------------------


def test_rated_game_of_example_1_is_encoded_byte_for_byte() -> None:
    # 1800.00 beats 1700.00, K = 20, D = 100 -> .64 / .36: +7.20 / -7.20.
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    payloads = play(store, "g1", "alice", "bob", "1-0")
    assert conforms(payloads["alice"]) == (
        b'{"event_id":"g1/alice","game_id":"g1","source_event_id":"ev-g1","player_id":"alice",'
        b'"opponent_id":"bob","category":"blitz","kind":"rated_game","score":1,"rating_before":1800.00,'
        b'"rating_after":1807.20,"display_before":1800,"display_after":1807,"delta":7.20,"k_factor":20,'
        b'"expected_score":0.64,"seq":2,'
        b'"state":{"status":"rated","rating":1807.20,"rated_games":41,"qualifying":[],"seq":2},'
        b'"finished_at":"2026-11-29T22:00:00.123+01:00"}'
    )
    # 1692.80 is displayed 1693.
    assert conforms(payloads["bob"]) == (
        b'{"event_id":"g1/bob","game_id":"g1","source_event_id":"ev-g1","player_id":"bob",'
        b'"opponent_id":"alice","category":"blitz","kind":"rated_game","score":0,"rating_before":1700.00,'
        b'"rating_after":1692.80,"display_before":1700,"display_after":1693,"delta":-7.20,"k_factor":20,'
        b'"expected_score":0.36,"seq":2,'
        b'"state":{"status":"rated","rating":1692.80,"rated_games":41,"qualifying":[],"seq":2},'
        b'"finished_at":"2026-11-29T22:00:00.123+01:00"}'
    )


# --- qualifying_game, first_rating (example 4) -----------------------------------------------


@pytest.fixture
def example_4() -> dict[str, bytes]:
    """newbie (white) against 1500..1900: 0.5, 1, 1, 0, 0.5; the payloads of games 4 and 5."""
    store = new_store()
    results = ["1/2-1/2", "1-0", "1-0", "0-1", "1/2-1/2"]
    out: dict[str, bytes] = {}
    for i, (rating, result) in enumerate(zip([150000, 160000, 170000, 180000, 190000], results, strict=True), 1):
        seed(store, f"o{i}", rating)
        payloads = play(store, f"q{i}", "newbie", f"o{i}", result)
        assert list(payloads) == ["newbie"]  # the rated opponent's state never changes
        out[f"q{i}"] = payloads["newbie"]
    return out


def test_qualifying_game_is_encoded_with_its_counted_games(example_4: dict[str, bytes]) -> None:
    assert conforms(example_4["q4"]) == (
        b'{"event_id":"q4/newbie","game_id":"q4","source_event_id":"ev-q4","player_id":"newbie",'
        b'"opponent_id":"o4","category":"blitz","kind":"qualifying_game","score":0,"rating_before":null,'
        b'"rating_after":null,"display_before":1200,"display_after":1200,"delta":null,"k_factor":null,'
        b'"expected_score":null,"seq":4,'
        b'"state":{"status":"unrated","rating":null,"rated_games":0,"qualifying":['
        b'{"game_id":"q1","opponent_id":"o1","opponent_rating":1500.00,"score":0.5},'
        b'{"game_id":"q2","opponent_id":"o2","opponent_rating":1600.00,"score":1},'
        b'{"game_id":"q3","opponent_id":"o3","opponent_rating":1700.00,"score":1},'
        b'{"game_id":"q4","opponent_id":"o4","opponent_rating":1800.00,"score":0}'
        b'],"seq":4},'
        b'"finished_at":"2026-11-29T22:00:00.123+01:00"}'
    )


def test_first_rating_of_example_4_is_encoded_byte_for_byte(example_4: dict[str, bytes]) -> None:
    # Ra = 1700.00, S = 3 -> Rf = 1720.00, 0 rated games.
    assert conforms(example_4["q5"]) == (
        b'{"event_id":"q5/newbie","game_id":"q5","source_event_id":"ev-q5","player_id":"newbie",'
        b'"opponent_id":"o5","category":"blitz","kind":"first_rating","score":0.5,"rating_before":null,'
        b'"rating_after":1720.00,"display_before":1200,"display_after":1720,"delta":null,"k_factor":null,'
        b'"expected_score":null,"seq":5,'
        b'"state":{"status":"rated","rating":1720.00,"rated_games":0,"qualifying":[],"seq":5},'
        b'"finished_at":"2026-11-29T22:00:00.123+01:00"}'
    )


# --- qualification_reset (example 5) --------------------------------------------------------


def test_qualification_reset_of_example_5_is_encoded_byte_for_byte() -> None:
    # S = 1.5 against Ra = 1100.00: p = .3 -> -149 -> 951.00 < 1000.
    store = new_store()
    seed(store, "r1", 110000)
    for i, result in enumerate(["1/2-1/2", "1/2-1/2", "1/2-1/2", "0-1", "0-1"], 1):
        payload = play(store, f"w{i}", "weak", "r1", result)["weak"]
    assert conforms(payload) == (
        b'{"event_id":"w5/weak","game_id":"w5","source_event_id":"ev-w5","player_id":"weak",'
        b'"opponent_id":"r1","category":"blitz","kind":"qualification_reset","score":0,"rating_before":null,'
        b'"rating_after":null,"display_before":1200,"display_after":1200,"delta":null,"k_factor":null,'
        b'"expected_score":null,"seq":5,'
        b'"state":{"status":"unrated","rating":null,"rated_games":0,"qualifying":[],"seq":5},'
        b'"finished_at":"2026-11-29T22:00:00.123+01:00"}'
    )


# --- rating_lost (example 6) -----------------------------------------------------------------


def test_rating_lost_of_example_6_is_encoded_byte_for_byte() -> None:
    # 1003.00, K = 20, PD .50, loses: -10.00 -> 993.00 < 1000.
    store = new_store()
    seed(store, "erin", 100300, rated_games=30)
    seed(store, "frank", 100300, rated_games=30)
    payloads = play(store, "l1", "erin", "frank", "0-1")
    assert conforms(payloads["erin"]) == (
        b'{"event_id":"l1/erin","game_id":"l1","source_event_id":"ev-l1","player_id":"erin",'
        b'"opponent_id":"frank","category":"blitz","kind":"rating_lost","score":0,"rating_before":1003.00,'
        b'"rating_after":null,"display_before":1003,"display_after":1200,"delta":null,"k_factor":20,'
        b'"expected_score":0.50,"seq":2,'
        b'"state":{"status":"unrated","rating":null,"rated_games":0,"qualifying":[],"seq":2},'
        b'"finished_at":"2026-11-29T22:00:00.123+01:00"}'
    )


# --- UTF-8 and escaping --------------------------------------------------------------------


def test_a_non_ascii_source_event_id_is_written_as_utf8_and_a_quote_escaped() -> None:
    # A draw: 20 x (0.5 - .64) = -2.80 -> 1797.20 (displayed 1797).
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    payloads = play(store, "u1", "alice", "bob", "1/2-1/2", event_id='é-"1')
    # "é" is the two UTF-8 bytes C3 A9, not \u00e9; the quote is \".
    assert conforms(payloads["alice"]) == (
        b'{"event_id":"u1/alice","game_id":"u1","source_event_id":"\xc3\xa9-\\"1","player_id":"alice",'
        b'"opponent_id":"bob","category":"blitz","kind":"rated_game","score":0.5,"rating_before":1800.00,'
        b'"rating_after":1797.20,"display_before":1800,"display_after":1797,"delta":-2.80,"k_factor":20,'
        b'"expected_score":0.64,"seq":2,'
        b'"state":{"status":"rated","rating":1797.20,"rated_games":41,"qualifying":[],"seq":2},'
        b'"finished_at":"2026-11-29T22:00:00.123+01:00"}'
    )
    assert RatingChanged.model_validate_json(payloads["alice"]).source_event_id == 'é-"1'


def test_finished_at_with_z_is_copied_verbatim() -> None:
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    game = GameFinished.model_validate_json(
        b'{"event_id":"e","game_id":"g9","finished_at":"2026-11-29T21:00:00.5Z","rated":true,'
        b'"time_control":{"base_seconds":180,"increment_seconds":0},"white_id":"alice","black_id":"bob",'
        b'"result":"1-0","termination":"timeout"}'
    )
    (update, _) = store.apply(game).updates
    assert update.payload.endswith(b',"finished_at":"2026-11-29T21:00:00.5Z"}')


@pytest.mark.parametrize(
    ("event_id", "encoded"),
    [
        ("a\\b", b'"a\\\\b"'),  # a backslash is escaped as \\
        ("\U0001f600", b'"\xf0\x9f\x98\x80"'),  # outside the BMP: 4 UTF-8 bytes, not a \ud83d\ude00 pair
        ("日本", b'"\xe6\x97\xa5\xe6\x9c\xac"'),
        ("tab\tnl\n", b'"tab\\tnl\\n"'),  # controls must be escaped in JSON strings
    ],
)
def test_the_source_event_id_is_written_as_a_utf8_json_string(event_id: str, encoded: bytes) -> None:
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    payload = play(store, "u1", "alice", "bob", "1-0", event_id=event_id)["alice"]
    assert b',"source_event_id":' + encoded + b',"player_id":"alice",' in payload
    assert json.loads(payload)["source_event_id"] == event_id
    assert conforms(payload)


def test_a_control_character_in_the_source_event_id_keeps_the_payload_valid_json() -> None:
    store = new_store()
    seed(store, "alice", 180000)
    seed(store, "bob", 170000)
    payload = play(store, "u1", "alice", "bob", "1-0", event_id="x\x01\x1fy")["alice"]
    assert json.loads(payload)["source_event_id"] == "x\x01\x1fy"
    assert b"\x01" not in payload
