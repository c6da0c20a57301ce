"""Contract v2's `glicko2` events through the engine, byte for byte: the contract's example (W9: carol
seeded, then g1), bob's event as the contract's text gives it, one golden event per kind written by hand
from the contract's tables (a rated game of a player with history, an import over a rating that played),
and W6's stream (games days apart, deviations grown with time) number by number, each event valid and
read back by a restore as the state the engine keeps."""

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from schemas.rating_changed_v2 import RATING_CHANGED_V2, Glicko2RatingChanged
from schemas.system_game import SystemGameFinished
from tests.support.contract import VALID_GAME
from tests.support.ratings import Ratings
from tests.support.v2_examples import CONTRACT_GLICKO2
from worker.engine.engine import Engine, SeedVerdict, Verdict
from worker.engine.events import RatingEvent
from worker.rules.hundredths import Hundredths, Points
from worker.rules.interface import Kind, SeedRow
from worker.systems.glicko2.codec import GLICKO2_STATES
from worker.systems.glicko2.events import encode_glicko2, read_glicko2
from worker.systems.glicko2.rules import GlickoState, Nanos, parse_seed_row
from worker.systems.registry import GLICKO2

ENGINE = Engine(GLICKO2, Points(1200))
AT = "2026-11-29T12:00:00Z"

# bob's event of the contract's example, written from its text (1262.86, -237.14, display 1263,
# expected_score 0.49) and W1 (bob's RD and sigma are alice's).
BOB_G1 = (
    b'{"event_id":"g1/bob","system":"glicko2","game_id":"g1","source_event_id":"ev-1","player_id":"bob",'
    b'"opponent_id":"alice","category":"blitz","kind":"rated_game","score":0,"rating_before":1500.00,'
    b'"rating_after":1262.86,"display_before":1500,"display_after":1263,"delta":-237.14,"seq":1,'
    b'"state":{"rating":1262.86,"rated_games":1,"seq":1,"deviation":396.71,"volatility":0.089998199,'
    b'"last_rated_at":"2026-11-29T12:00:00Z"},"finished_at":"2026-11-29T12:00:00Z",'
    b'"detail":{"expected_score":0.49,"deviation_before":500.00,"deviation_after":396.71,'
    b'"volatility_before":0.090000000,"volatility_after":0.089998199}}'
)


def h(text: str) -> Hundredths:
    whole, _, frac = text.partition(".")
    return Hundredths(int(whole) * 100 + int(frac.ljust(2, "0")))


def n(text: str) -> Nanos:
    whole, _, frac = text.partition(".")
    return Nanos(int(whole) * 10**9 + int(frac.ljust(9, "0")))


def game(**changes: Any) -> SystemGameFinished:
    """The contract's valid game (g1, ev-1, 3+0: alice, white, beats bob) at W1's instant, varied."""
    return SystemGameFinished.model_validate_json(json.dumps({**VALID_GAME, "finished_at": AT, **changes}))


def seed_row(text: str) -> SeedRow:
    return parse_seed_row(text.split(","))


def test_w9_the_contracts_example_byte_for_byte() -> None:
    store = Ratings(ENGINE)
    imported = store.seed(seed_row("carol,blitz,2100.00,120,60.00,0.06"))
    assert imported.verdict is SeedVerdict.IMPORTED and imported.update is not None
    assert imported.update.key == "carol/blitz"
    outcome = store.apply(game())
    assert outcome.verdict is Verdict.APPLIED
    alice, bob = outcome.updates
    assert [imported.update.payload, alice.payload] == CONTRACT_GLICKO2
    assert (alice.key, bob.key) == ("alice/blitz", "bob/blitz")
    assert bob.payload == BOB_G1


def test_bobs_event_as_the_contracts_text_says() -> None:
    bob = ENGINE.apply(game(), {}, None).updates[1]
    event = json.loads(bob.payload)
    assert (event["rating_after"], event["delta"], event["display_after"]) == (1262.86, -237.14, 1263)
    assert event["detail"]["expected_score"] == 0.49
    assert b'"delta":-237.14,' in bob.payload and b'"expected_score":0.49,' in bob.payload


def test_one_golden_rated_game_of_players_with_history() -> None:
    """W6's g4, from the states its table gives after g3 (alice) and g1 (bob): alice's RD grew from
    306.91 to 309.46 in 30 days and 0.5 s, bob's from 396.71 to 398.69; sigma_before the stored one."""
    alice = GlickoState(h("1491.47"), h("306.91"), n("0.089995531"), 3, "2026-11-29T13:00:00+01:00", 3)
    bob = GlickoState(h("1262.86"), h("396.71"), n("0.089998199"), 1, "2026-11-29T12:00:00Z", 1)
    g4 = game(game_id="g4", event_id="ev-g4", finished_at="2026-12-29T12:00:00.5Z")
    outcome = ENGINE.apply(g4, {"alice/blitz": alice, "bob/blitz": bob}, None)
    assert [u.payload for u in outcome.updates] == [
        b'{"event_id":"g4/alice","system":"glicko2","game_id":"g4","source_event_id":"ev-g4","player_id":"alice",'
        b'"opponent_id":"bob","category":"blitz","kind":"rated_game","score":1,"rating_before":1491.47,'
        b'"rating_after":1572.56,"display_before":1491,"display_after":1573,"delta":81.09,"seq":4,'
        b'"state":{"rating":1572.56,"rated_games":4,"seq":4,"deviation":276.23,"volatility":0.089991185,'
        b'"last_rated_at":"2026-12-29T12:00:00.5Z"},"finished_at":"2026-12-29T12:00:00.5Z",'
        b'"detail":{"expected_score":0.70,"deviation_before":309.46,"deviation_after":276.23,'
        b'"volatility_before":0.089995531,"volatility_after":0.089991185}}',
        b'{"event_id":"g4/bob","system":"glicko2","game_id":"g4","source_event_id":"ev-g4","player_id":"bob",'
        b'"opponent_id":"alice","category":"blitz","kind":"rated_game","score":0,"rating_before":1262.86,'
        b'"rating_after":1147.06,"display_before":1263,"display_after":1147,"delta":-115.80,"seq":2,'
        b'"state":{"rating":1147.06,"rated_games":2,"seq":2,"deviation":322.30,"volatility":0.089993100,'
        b'"last_rated_at":"2026-12-29T12:00:00.5Z"},"finished_at":"2026-12-29T12:00:00.5Z",'
        b'"detail":{"expected_score":0.27,"deviation_before":398.69,"deviation_after":322.30,'
        b'"volatility_before":0.089998199,"volatility_after":0.089993100}}',
    ]


# alice after W1's g1 (seq 1), as its table and the contract's example give it.
ALICE_G1 = GlickoState(h("1737.14"), h("396.71"), n("0.089998199"), 1, AT, 1)


def test_one_golden_import_over_a_rating_that_played() -> None:
    """W8: forced, `imported` has rating_before, deviation_before and volatility_before the previous
    stored values, and last_rated_at null."""
    row = seed_row("alice,blitz,1800,10,60,0.06")
    assert ENGINE.seed(row, ALICE_G1).verdict is SeedVerdict.REFUSED  # not forced
    forced = ENGINE.seed(row, ALICE_G1, force=True)
    assert forced.verdict is SeedVerdict.IMPORTED and forced.update is not None
    assert forced.update.payload == (
        b'{"event_id":"import/alice/blitz/2","system":"glicko2","game_id":null,"source_event_id":null,'
        b'"player_id":"alice","opponent_id":null,"category":"blitz","kind":"imported","score":null,'
        b'"rating_before":1737.14,"rating_after":1800.00,"display_before":1737,"display_after":1800,"delta":62.86,'
        b'"seq":2,"state":{"rating":1800.00,"rated_games":10,"seq":2,"deviation":60.00,"volatility":0.060000000,'
        b'"last_rated_at":null},"finished_at":null,"detail":{"expected_score":null,"deviation_before":396.71,'
        b'"deviation_after":60.00,"volatility_before":0.089998199,"volatility_after":0.060000000}}'
    )
    assert forced.update.state == GlickoState(h("1800"), h("60"), n("0.06"), 10, None, 2)


def test_w8_after_a_forced_import_the_next_game_even_a_year_later_starts_from_the_seeded_deviation() -> None:
    forced = ENGINE.seed(seed_row("alice,blitz,1800,10,60,0.06"), ALICE_G1, force=True).update
    assert forced is not None
    later = game(game_id="g2", event_id="ev-g2", black_id="dave", finished_at="2027-11-29T12:00:00Z")
    alice = ENGINE.apply(later, {"alice/blitz": forced.state}, None).updates[0]
    Glicko2RatingChanged.model_validate_json(alice.payload)
    event = json.loads(alice.payload, parse_float=str)
    assert event["rating_before"] == "1800.00"
    assert (event["detail"]["deviation_before"], event["detail"]["volatility_before"]) == ("60.00", "0.060000000")
    assert alice.state.last_rated_at == "2027-11-29T12:00:00Z"
    assert (alice.state.rated_games, alice.state.seq) == (11, 3)


def test_w8_a_row_equal_to_a_played_rating_is_not_skipped_its_last_rated_at_is_not_null() -> None:
    same = seed_row("alice,blitz,1737.14,1,396.71,0.089998199")
    assert ENGINE.seed(same, ALICE_G1).verdict is SeedVerdict.REFUSED
    # Seeded once (last_rated_at null), the same row again is skipped, forced or not.
    seeded = ENGINE.seed(same, GlickoState()).update
    assert seeded is not None
    assert ENGINE.seed(same, seeded.state).verdict is SeedVerdict.UNCHANGED
    assert ENGINE.seed(same, seeded.state, force=True).verdict is SeedVerdict.UNCHANGED


def test_the_number_forms_of_the_encoding() -> None:
    """Two decimals for ratings, deltas, deviations and E (leading `-`), nine for volatilities; a
    source_event_id escaped as the contract says."""
    event: RatingEvent[GlickoState] = RatingEvent(
        event_id="g7/x",
        game_id="g7",
        source_event_id='a"b\\c\x01\x7fé',
        player_id="x",
        opponent_id="y",
        category="bullet",
        kind=Kind.RATED_GAME,
        score=Hundredths(50),
        rating_before=Hundredths(40005),
        rating_after=Hundredths(40000),
        display_before=Points(400),
        display_after=Points(400),
        k_factor=None,
        expected_score=Hundredths(5),
        state=GlickoState(Hundredths(40000), Hundredths(4500), Nanos(100_000_000), 7, "2026-11-29T12:00:00.5+01:00", 9),
        finished_at="2026-11-29T12:00:00.5+01:00",
        detail=(Hundredths(50000), Nanos(1)),
    )
    assert encode_glicko2(event) == (
        b'{"event_id":"g7/x","system":"glicko2","game_id":"g7","source_event_id":"a\\"b\\\\c\\u0001\x7f\xc3\xa9",'
        b'"player_id":"x","opponent_id":"y","category":"bullet","kind":"rated_game","score":0.5,'
        b'"rating_before":400.05,"rating_after":400.00,"display_before":400,"display_after":400,"delta":-0.05,'
        b'"seq":9,"state":{"rating":400.00,"rated_games":7,"seq":9,"deviation":45.00,"volatility":0.100000000,'
        b'"last_rated_at":"2026-11-29T12:00:00.5+01:00"},"finished_at":"2026-11-29T12:00:00.5+01:00",'
        b'"detail":{"expected_score":0.05,"deviation_before":500.00,"deviation_after":45.00,'
        b'"volatility_before":0.000000001,"volatility_after":0.100000000}}'
    )


# W6: (game, finished_at, white, black, result, events: (player, rating before, after,
# deviation_before, after, sigma after, E or None where the table gives none, last_rated_at after)).
G1, G2, G3, G4 = AT, "2026-11-29T13:00:00+01:00", "2026-11-28T12:00:00Z", "2026-12-29T12:00:00.5Z"
W6Event = tuple[str, str, str, str, str, str, str | None, str]
W6: list[tuple[str, str, str, str, str, list[W6Event]]] = [
    ("g1", G1, "alice", "bob", "1-0", [
        ("alice", "1500.00", "1737.14", "500.00", "396.71", "0.089998199", None, G1),
        ("bob", "1500.00", "1262.86", "500.00", "396.71", "0.089998199", None, G1),
    ]),
    ("g2", G2, "alice", "carol", "1/2-1/2", [
        ("alice", "1737.14", "1670.54", "396.71", "345.11", "0.089993974", "0.68", G2),  # the new string
        ("carol", "1500.00", "1612.70", "500.00", "387.96", "0.089995706", "0.29", G2),
    ]),
    ("g3", G3, "dave", "alice", "1-0", [
        ("dave", "1500.00", "1839.21", "500.00", "366.86", "0.090000000", "0.35", G3),
        ("alice", "1670.54", "1491.47", "345.11", "306.91", "0.089995531", "0.62", G2),  # kept: earlier game
    ]),
    ("g4", G4, "alice", "bob", "1-0", [
        ("alice", "1491.47", "1572.56", "309.46", "276.23", "0.089991185", "0.70", G4),
        ("bob", "1262.86", "1147.06", "398.69", "322.30", "0.089993100", "0.27", G4),
    ]),
]  # fmt: skip


def test_w6_a_stream_showing_time() -> None:
    store = Ratings(ENGINE)
    games_of: dict[str, int] = {}
    for game_id, finished_at, white, black, result, events in W6:
        ids = {"game_id": game_id, "event_id": f"ev-{game_id}", "white_id": white, "black_id": black}
        played = game(**ids, finished_at=finished_at, result=result)
        outcome = store.apply(played)
        assert outcome.verdict is Verdict.APPLIED, game_id
        assert len(outcome.updates) == len(events) == 2
        for update, (player, before, after, rd_before, rd_after, sigma, e, last) in zip(
            outcome.updates, events, strict=True
        ):
            where = f"{game_id}/{player}"
            games_of[player] = games_of.get(player, 0) + 1
            assert update.key == f"{player}/blitz", where
            model = Glicko2RatingChanged.model_validate_json(update.payload)
            assert RATING_CHANGED_V2.validate_json(update.payload) == model
            event = json.loads(update.payload, parse_float=str)  # the numbers as written
            state, detail = event["state"], event["detail"]
            assert event["kind"] == "rated_game" and event["finished_at"] == finished_at, where
            assert (event["rating_before"], event["rating_after"], state["rating"]) == (before, after, after), where
            assert (detail["deviation_before"], detail["deviation_after"]) == (rd_before, rd_after), where
            assert (state["deviation"], state["volatility"], detail["volatility_after"]) == (rd_after, sigma, sigma)
            if e is not None:
                assert detail["expected_score"] == e, where
            assert state["last_rated_at"] == last, where
            assert (state["rated_games"], event["seq"], state["seq"]) == (games_of[player],) * 3, where
            assert update.state == store.states[update.key]
            assert read_glicko2(update.payload).state == store.states[update.key], where
    assert store.states["alice/blitz"] == GlickoState(h("1572.56"), h("276.23"), n("0.089991185"), 4, G4, 4)
    assert store.states["dave/blitz"] == GlickoState(h("1839.21"), h("366.86"), n("0.09"), 1, G3, 1)


def test_w6_the_game_that_finished_earlier_grows_nothing_and_moves_nothing_back() -> None:
    """g3 is a day before alice's latest game: her deviation_before is her stored RD (345.11)."""
    alice = GlickoState(h("1670.54"), h("345.11"), n("0.089993974"), 2, G2, 2)
    g3 = game(game_id="g3", finished_at=G3, white_id="dave", black_id="alice")
    update = ENGINE.apply(g3, {"alice/blitz": alice}, None).updates[1]
    assert update.state.last_rated_at == G2
    assert update.event.detail == (h("345.11"), n("0.089993974"))


@pytest.mark.parametrize(
    "state",
    [
        GlickoState(),
        GlickoState(seq=1),
        ALICE_G1,
        GlickoState(h("400"), h("45"), Nanos(1), 0, None, 3),
        GlickoState(h("2200"), h("500"), n("0.1"), 12345, "0000-01-01T00:10:00-01:00", 99),
        GlickoState(h("1491.47"), h("306.91"), n("0.089995531"), 3, "2016-12-31T23:59:60.123456789+01:00", 3),
    ],
)
def test_glicko2_states_round_trip_through_the_store_codec(state: GlickoState) -> None:
    assert GLICKO2_STATES.decode(GLICKO2_STATES.encode(state)) == state
    assert GLICKO2_STATES.decode(GLICKO2_STATES.encode(state).decode()) == state
    assert GLICKO2_STATES.unseen == GlickoState()


def test_the_contracts_example_is_read_back_by_a_restore() -> None:
    carol, alice = (read_glicko2(p) for p in CONTRACT_GLICKO2)
    assert (carol.key, carol.state, carol.game_id, carol.opponent_key, carol.kind) == (
        "carol/blitz",
        GlickoState(h("2100"), h("60"), n("0.06"), 120, None, 1),
        None,
        None,
        Kind.IMPORTED,
    )
    assert (alice.key, alice.state, alice.game_id, alice.opponent_key, alice.kind) == (
        "alice/blitz",
        GlickoState(h("1737.14"), h("396.71"), n("0.089998199"), 1, AT, 1),
        "g1",
        "bob/blitz",
        Kind.RATED_GAME,
    )
    bob = read_glicko2(BOB_G1)
    assert bob.state == GlickoState(h("1262.86"), h("396.71"), n("0.089998199"), 1, AT, 1)


@given(
    st.integers(40000, 400000),
    st.integers(4500, 50000),
    st.integers(1, 100_000_000),
    st.integers(0, 10**6),
)
@example(51205, 6407, 15, 0)  # values whose nearest doubles, scaled, fall below them
@example(40000, 4500, 1, 0)
@example(150000, 50000, 100_000_000, 1)
def test_a_restore_reads_every_value_back_exactly(rating: int, deviation: int, volatility: int, games: int) -> None:
    row = SeedRow("x", "rapid", Hundredths(rating), games, (Hundredths(deviation), Nanos(volatility)))
    update = ENGINE.seed(row, GlickoState()).update
    assert update is not None
    assert update.state == GlickoState(Hundredths(rating), Hundredths(deviation), Nanos(volatility), games, None, 1)
    assert read_glicko2(update.payload).state == update.state
