"""Tornelo's worked examples through the engine (2, 3, 5-17 and 19-22, numbered as in the tests' names,
on the rules of docs/systems/tornelo.md, "Rules and readings"; and 18, the bytes of its "State and
events, with an example"), each from seeded players and games through `Engine(TORNELO.with_rules(...))` in the
harness that closes tournaments as `rate`'s close lines do. Every event is validated by contract v2's
schema and read back from its bytes; the numbers it is compared with are the spec's (or follow from the
spec's formulas by hand, as commented), never computed by the code under test. The golden events are the
contract's example (docs/systems/tornelo.md, "State and events, with an example") and one event per kind
written by hand from the contract's tables. The arithmetic alone (examples 1, 4, 8 and 12, seeding rows)
is tests/unit/rules/test_tornelo.py's."""

import json
from collections import defaultdict
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.close_line import TorneloCloseLine
from schemas.rating_changed_periods import TorneloRatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2
from schemas.tornelo_game import TorneloGameFinished
from tests.support.contract import VALID_GAME
from tests.support.ratings import Ratings
from tests.support.v2_examples_tornelo import A_IMPORTED, B_CLOSE, B_G1, B_IMPORTED, CONTRACT_TORNELO
from worker.engine.decoder import BadInput, ErrorKind, decode_line
from worker.engine.engine import Engine, SeedVerdict, Update, Verdict
from worker.rules.hundredths import Hundredths, Points
from worker.systems.registry import TORNELO
from worker.systems.tornelo.rules import Parameters, TorneloRules, TorneloState, parse_seed_row

D = Decimal
AT = "2026-11-10T12:00:00Z"
CONTROLS = {
    "rapid": {"base_seconds": 900, "increment_seconds": 0},  # 15+0
    "blitz": {"base_seconds": 180, "increment_seconds": 0},  # 3+0
    "bullet": {"base_seconds": 60, "increment_seconds": 0},  # 1+0
}
ABSENT = object()  # tournament_id left out of the message
Event = dict[str, Any]


def game(
    game_id: str,
    white: str,
    black: str,
    result: str = "1-0",
    tournament: object = ABSENT,
    category: str = "rapid",
) -> TorneloGameFinished:
    """The contract's valid game as the examples play it: input event_id `e-{game_id}`, `AT`."""
    value: dict[str, Any] = {
        **VALID_GAME,
        "game_id": game_id,
        "event_id": f"e-{game_id}",
        "finished_at": AT,
        "time_control": CONTROLS[category],
        "white_id": white,
        "black_id": black,
        "result": result,
    }
    if tournament is not ABSENT:
        value["tournament_id"] = tournament
    return TorneloGameFinished.model_validate_json(json.dumps(value))


def read(updates: list[Update[TorneloState]] | tuple[Update[TorneloState], ...]) -> list[Event]:
    """The events' payloads, each valid as a `tornelo` event of contract v2 under its key, read back
    with their numbers exact (decimals as Decimal)."""
    events = []
    for update in updates:
        assert isinstance(RATING_CHANGED_V2.validate_json(update.payload), TorneloRatingChanged)
        event: Event = json.loads(update.payload, parse_float=Decimal)
        assert update.key == f"{event['player_id']}/{event['category']}"
        events.append(event)
    return events


def change(event: Event) -> tuple[Any, ...]:
    """(kind, rating_before, rating_after, delta, rated_games) of an event."""
    return (event["kind"], event["rating_before"], event["rating_after"], event["delta"], event["state"]["rated_games"])


def detail(tournament: str | None, games: int, points: str, expected: str | None, k: int | None = None) -> Event:
    """A `detail` as the tables write it; k_factor and k_modifier (1.00) set only with `k`."""
    return {
        "tournament_id": tournament,
        "games": games,
        "points": D(points),
        "expected": None if expected is None else D(expected),
        "k_factor": k,
        "k_modifier": None if k is None else D("1.00"),
    }


class Club:
    """The harness with the examples' conventions: players seeded from rows, numbered games."""

    def __init__(self, *rows: str, parameters: Parameters | None = None) -> None:
        rules = TorneloRules() if parameters is None else TorneloRules(parameters)
        self.ratings = Ratings(Engine(TORNELO.with_rules(rules), Points(1200)))
        self.imported: dict[str, Event] = {}
        self.played = 0
        for text in rows:
            outcome = self.ratings.seed(parse_seed_row(text.split(",")))
            assert outcome.verdict is SeedVerdict.IMPORTED and outcome.update is not None
            (event,) = read([outcome.update])
            self.imported[event["player_id"]] = event

    def play(
        self, white: str, black: str, result: str = "1-0", tournament: str | None = None, category: str = "rapid"
    ) -> list[Event]:
        """A new game (no tournament_id when `tournament` is None): its events, white's first."""
        self.played += 1
        at = ABSENT if tournament is None else tournament
        outcome = self.ratings.apply(game(f"g{self.played}", white, black, result, at, category))
        assert outcome.verdict in (Verdict.APPLIED, Verdict.SKIPPED)
        events = read(outcome.updates)
        assert [e["game_id"] for e in events] == [f"g{self.played}"] * len(events)
        players = [e["player_id"] for e in events]
        assert players == [p for p in (white, black) if p in players]  # white's first
        return events

    def close(self, tournament: str) -> dict[str, Event]:
        """A close line: its events by player, in the order they were published."""
        events = read(self.ratings.close(tournament))
        assert all(e["event_id"] == f"period/{tournament}/{e['player_id']}/{e['category']}" for e in events)
        return {e["player_id"]: e for e in events}

    def rating(self, player: str, category: str = "rapid") -> int | None:
        rating = self.ratings.state(f"{player}/{category}").rating
        return None if rating is None else rating // 100


def established(*players: tuple[str, int]) -> list[str]:
    """The examples' established players: 40 games, modifier 1.00, rapid."""
    return [f"{player},rapid,{rating},40," for player, rating in players]


# --- example 2 and 3: a tournament of an established player


def example_2(factor: int = 100, last: str = "1-0") -> tuple[Club, list[Event]]:
    """P 1800 in T1: beats O20 (2000), draws O19 (1900), beats O17 (1700), `last` against O16 (1600)."""
    club = Club(
        *established(("P", 1800), ("O20", 2000), ("O19", 1900), ("O17", 1700), ("O16", 1600)),
        parameters=Parameters(bonus_factor=Hundredths(factor)),
    )
    recorded = []
    for opponent, result in (("O20", "1-0"), ("O19", "1/2-1/2"), ("O17", "1-0"), ("O16", last)):
        recorded += club.play("P", opponent, result, "T1")
    return club, recorded


def test_example_2_recording_changes_no_rating_and_values_each_game_now() -> None:
    _, recorded = example_2()
    p_games = [e for e in recorded if e["player_id"] == "P"]
    assert [e["detail"]["expected"] for e in p_games] == [D("0.240253"), D("0.359935"), D("0.640065"), D("0.759747")]
    assert [e["score"] for e in p_games] == [1, D("0.5"), 1, 1]
    for e in recorded:
        assert e["kind"] == "period_game"
        assert (e["rating_before"], e["delta"]) == (e["rating_after"], 0)
        assert e["detail"]["tournament_id"] == "T1"
    assert [e["state"]["seq"] for e in p_games] == [2, 3, 4, 5]
    assert p_games[-1]["state"]["pending"] == [
        {
            "tournament_id": "T1",
            "games": 4,
            "points": D("3.50"),
            "expected": D("2.000000"),
            "performance_games": 4,
            "performance_points": D("3.50"),
            "performance_sum": 2400 + 1900 + 2100 + 2000,
        }
    ]


def test_example_2_an_established_player_with_a_bonus() -> None:
    club, _ = example_2()
    closed = club.close("T1")
    assert list(closed) == ["O16", "O17", "O19", "O20", "P"]  # the byte order of the keys
    p = closed["P"]
    assert change(p) == ("period_rating", 1800, 1840, 40, 44)
    assert p["detail"] == detail("T1", 4, "3.50", "2.000000", 20)
    assert p["state"]["pending"] == []
    assert p["state"]["performance_sum"] is None
    assert (p["display_before"], p["display_after"]) == (1800, 1840)
    # O20 -0.759747 x 20 = -15.19; O19 0.5 - 0.640065 -> -2.80; O17 -7.20; O16 -4.81.
    opponents = {name: closed[name]["rating_after"] for name in ("O20", "O19", "O17", "O16")}
    assert opponents == {"O20": 1985, "O19": 1897, "O17": 1693, "O16": 1595}
    assert closed["O20"]["detail"] == detail("T1", 1, "0.00", "0.759747", 20)
    assert closed["O19"]["detail"] == detail("T1", 1, "0.50", "0.640065", 20)
    assert {closed[name]["state"]["rated_games"] for name in opponents} == {41}


def test_example_2_with_factor_0_has_no_bonus() -> None:
    club, _ = example_2(factor=0)
    closed = club.close("T1")
    assert change(closed["P"]) == ("period_rating", 1800, 1830, 30, 44)
    assert {name: e["rating_after"] for name, e in closed.items() if name != "P"} == {
        "O16": 1595,
        "O17": 1693,
        "O19": 1897,
        "O20": 1985,
    }


def test_example_3_no_bonus_at_a_score_difference_of_1_or_less() -> None:
    club, _ = example_2(last="0-1")
    closed = club.close("T1")
    assert change(closed["P"]) == ("period_rating", 1800, 1810, 10, 44)
    assert closed["P"]["detail"] == detail("T1", 4, "2.50", "2.000000", 20)
    assert change(closed["O16"]) == ("period_rating", 1600, 1615, 15, 41)  # +0.759747 x 20 = 15.19


# --- examples 5 to 8: K, the modifier, rounding, the floor (one-game events unless in a tournament)


@pytest.mark.parametrize(
    ("category", "rating", "k", "winner", "loser"),
    [
        ("blitz", 2250, 10, 2255, 2245),
        ("blitz", 2200, 20, 2210, 2190),
        ("rapid", 2250, 10, 2255, 2245),
        # Bullet: 10 at or below 2200, 5 above; 0.5 x 5 = 2.5 -> 3 (half away from zero).
        ("bullet", 2200, 10, 2205, 2195),
        ("bullet", 2250, 5, 2253, 2247),
    ],
)
def test_example_5_k_is_halved_above_2200(category: str, rating: int, k: int, winner: int, loser: int) -> None:
    club = Club(f"W,{category},{rating},40,", f"L,{category},{rating},40,")
    w, lo = club.play("W", "L", category=category)
    assert (w["category"], lo["category"]) == (category, category)
    assert change(w) == ("period_rating", rating, winner, winner - rating, 41)
    assert change(lo) == ("period_rating", rating, loser, loser - rating, 41)
    assert w["detail"] == detail(None, 1, "1.00", "0.500000", k)
    assert lo["detail"] == detail(None, 1, "0.00", "0.500000", k)


def test_example_6_the_players_k_modifier() -> None:
    club = Club("M,rapid,1800,40,1.50", "O,rapid,1800,40,")
    m, o = club.play("M", "O")
    assert change(m) == ("period_rating", 1800, 1815, 15, 41)  # 0.5 x 20 x 1.5
    assert (m["detail"]["k_modifier"], m["state"]["k_modifier"]) == (D("1.50"), D("1.50"))
    assert change(o) == ("period_rating", 1800, 1790, -10, 41)
    assert (o["detail"]["k_modifier"], o["state"]["k_modifier"]) == (D("1.00"), D("1.00"))


@pytest.mark.parametrize(
    ("first", "second", "sum_e", "after", "opponents"),
    [
        (1703, 2333, "0.975000", 2001, {"X": 1710, "Y": 2329}),
        (1667, 2297, "1.025000", 1999, {"X": 1674, "Y": 2294}),
    ],
)
def test_example_7_half_points_round_away_from_zero(
    first: int, second: int, sum_e: str, after: int, opponents: dict[str, int]
) -> None:
    club = Club(*established(("P", 2000), ("X", first), ("Y", second)))
    club.play("P", "X", "1/2-1/2", "T")
    club.play("Y", "P", "1/2-1/2", "T")
    closed = club.close("T")
    assert change(closed["P"]) == ("period_rating", 2000, after, after - 2000, 42)
    assert closed["P"]["detail"] == detail("T", 2, "1.00", sum_e, 20)
    assert {name: closed[name]["rating_after"] for name in ("X", "Y")} == opponents
    assert closed["Y"]["detail"]["k_factor"] == 10  # above 2200


@pytest.mark.parametrize(("rating", "delta"), [(110, -10), (105, -5)])
def test_example_8_the_floor_of_100(rating: int, delta: int) -> None:
    club = Club(*established(("W", rating), ("L", rating)))
    w, lo = club.play("W", "L")
    assert change(lo) == ("period_rating", rating, 100, delta, 41)
    assert change(w) == ("period_rating", rating, rating + 10, 10, 41)


# --- examples 9 to 14: unrated and provisional players


def test_example_9_a_provisional_player_over_two_tournaments() -> None:
    club = Club(*established(("B12", 1200), ("B15", 1500), ("B14", 1400), ("B13", 1300), ("B16", 1600)))
    recorded = club.play("U", "B12", "1-0", "T1") + club.play("B15", "U", "1-0", "T1")
    recorded += club.play("U", "B14", "1/2-1/2", "T1")
    for e in recorded:  # an unrated player's games have no E
        assert e["detail"]["expected"] is None
    u_game = recorded[0]
    assert (u_game["rating_before"], u_game["rating_after"], u_game["delta"]) == (None, None, None)
    assert (u_game["display_before"], u_game["display_after"]) == (1200, 1200)
    assert u_game["state"]["performance_sum"] is None  # unrated

    t1 = club.close("T1")
    u = t1["U"]
    assert change(u) == ("provisional_rating", None, 1367, None, 3)  # 4100 / 3 = 1366.67
    assert (u["display_before"], u["display_after"]) == (1200, 1367)
    assert u["state"]["performance_sum"] == 4100
    assert u["detail"] == detail("T1", 3, "1.50", None)
    for name, rating in (("B12", 1200), ("B15", 1500), ("B14", 1400)):
        assert change(t1[name]) == ("period_closed", rating, rating, 0, 40)
        assert t1[name]["detail"] == detail("T1", 0, "0.00", None)

    b13 = club.play("U", "B13", "1-0", "T2")[1]
    b16 = club.play("B16", "U", "1-0", "T2")[0]
    assert (b13["detail"]["expected"], b16["detail"]["expected"]) == (D("0.404757"), D("0.792696"))
    t2 = club.close("T2")
    assert change(t2["U"]) == ("provisional_rating", 1367, 1400, 33, 5)
    assert t2["U"]["state"]["performance_sum"] == 7000
    assert change(t2["B13"]) == ("period_rating", 1300, 1292, -8, 41)  # -8.10
    assert change(t2["B16"]) == ("period_rating", 1600, 1604, 4, 41)  # +4.15


def test_example_10_the_20th_game_makes_the_player_established() -> None:
    club = Club("U,rapid,1500,18,", *established(("a", 1500), ("b", 1500), ("c", 1500)))
    assert club.imported["U"]["state"]["performance_sum"] == 27000
    club.play("U", "a", "1-0", "T3")
    club.play("b", "U", "0-1", "T3")
    club.play("U", "c", "1/2-1/2", "T3")
    closed = club.close("T3")
    u = closed["U"]
    assert change(u) == ("provisional_rating", 1500, 1538, 38, 21)  # 32300 / 21 = 1538.10
    assert u["state"]["performance_sum"] is None
    assert u["detail"] == detail("T3", 3, "2.50", None)
    assert {name: closed[name]["rating_after"] for name in ("a", "b", "c")} == {"a": 1490, "b": 1490, "c": 1500}
    u_now, a_now = club.play("U", "a")  # outside tournaments
    assert change(u_now) == ("period_rating", 1538, 1547, 9, 22)  # E 0.568641 -> +8.63
    assert u_now["detail"] == detail(None, 1, "1.00", "0.568641", 20)
    assert a_now["detail"]["expected"] == D("0.431359")  # 1 - 0.568641


def test_example_11_nobody_rated() -> None:
    club = Club()
    club.play("X", "Y", "1-0", "T")
    club.play("Z", "X", "0-1", "T")
    club.play("Y", "Z", "1/2-1/2", "T")
    t = club.close("T")
    assert change(t["X"]) == ("provisional_rating", None, 1400, None, 2)  # (1400 + 1400) / 2
    assert change(t["Y"]) == ("provisional_rating", None, 800, None, 2)  # (600 + 1000) / 2
    assert change(t["Z"]) == ("provisional_rating", None, 800, None, 2)
    assert (t["X"]["state"]["performance_sum"], t["Y"]["state"]["performance_sum"]) == (2800, 1600)
    assert t["Y"]["detail"] == detail("T", 2, "0.50", None)
    club.play("W", "p1", "1-0", "S")
    club.play("p2", "W", "0-1", "S")
    club.play("W", "p3", "0-1", "S")
    s = club.close("S")
    assert change(s["W"]) == ("provisional_rating", None, 1133, None, 3)  # 3400 / 3 = 1133.33
    assert [s[p]["rating_after"] for p in ("p1", "p2", "p3")] == [600, 600, 1400]


def test_example_12_provisional_clamps() -> None:
    club = Club(*established(("L", 300), ("H", 2380)))
    (u,) = club.play("L", "U")  # L is not changed by an unrated opponent: no event
    assert u["player_id"] == "U"
    assert change(u) == ("provisional_rating", None, 100, None, 1)  # 300 - 400 = -100 -> 100
    (v,) = club.play("V", "H")
    assert change(v) == ("provisional_rating", None, 2700, None, 1)  # 2780 -> 2700
    assert v["state"]["performance_sum"] == 2780
    assert (club.rating("L"), club.rating("H")) == (300, 2380)


def test_example_13_rated_players_and_unrated_opponents() -> None:
    club = Club("P,rapid,1500,5,", *established(("E", 1800)))
    assert club.imported["P"]["state"]["performance_sum"] == 7500
    p_game, u_game = club.play("P", "U", "1-0", "T")
    assert (p_game["detail"]["expected"], u_game["detail"]["expected"]) == (None, None)
    t = club.close("T")
    assert list(t) == ["P", "U"]
    assert change(t["P"]) == ("period_closed", 1500, 1500, 0, 5)
    assert t["P"]["detail"] == detail("T", 0, "0.00", None)
    assert t["P"]["state"]["performance_sum"] == 7500
    assert change(t["U"]) == ("provisional_rating", None, 1100, None, 1)  # 1500 - 400

    e, p = club.play("E", "P")  # outside tournaments
    assert change(e) == ("period_rating", 1800, 1803, 3, 41)  # E 0.849020 -> +3.02
    assert e["detail"]["expected"] == D("0.849020")
    assert change(p) == ("provisional_rating", 1500, 1483, -17, 6)  # (7500 + 1400) / 6 = 1483.33
    assert p["state"]["performance_sum"] == 8900

    (u2,) = club.play("E", "U2")  # E unchanged, no event
    assert u2["player_id"] == "U2"
    assert change(u2) == ("provisional_rating", None, 1403, None, 1)  # 1803 - 400
    assert club.rating("E") == 1803


def test_example_14_a_seeded_initial_rating() -> None:
    club = Club("I,rapid,1600,0,", *established(("E", 1500)))
    assert club.imported["I"]["state"]["performance_sum"] == 0
    (u,) = club.play("I", "U")  # I has no event
    assert u["player_id"] == "U"
    assert change(u) == ("provisional_rating", None, 1200, None, 1)  # 1600 - 400
    i, e = club.play("I", "E")
    assert change(i) == ("provisional_rating", 1600, 1900, 300, 1)  # 1900 / 1
    assert i["state"]["performance_sum"] == 1900
    assert i["detail"] == detail(None, 1, "1.00", None)
    assert change(e) == ("period_rating", 1500, 1493, -7, 41)  # E(1500, 1600) = 0.359935 -> -7.20
    assert e["detail"] == detail(None, 1, "0.00", "0.359935", 20)


# --- examples 15 to 17: games outside tournaments, late games, overlapping tournaments


@pytest.mark.parametrize("tournament", [ABSENT, None], ids=["absent", "null"])
def test_example_15_a_game_with_no_tournament(tournament: object) -> None:
    club = Club(*established(("A", 1800), ("B", 1800)))
    outcome = club.ratings.apply(game("g1", "A", "B", tournament=tournament))
    a, b = read(outcome.updates)
    assert a["event_id"] == "g1/A" and b["event_id"] == "g1/B"
    assert (a["game_id"], a["source_event_id"], a["opponent_id"], a["score"], a["finished_at"]) == (
        "g1",
        "e-g1",
        "B",
        1,
        AT,
    )
    assert change(a) == ("period_rating", 1800, 1810, 10, 41)
    assert a["detail"] == detail(None, 1, "1.00", "0.500000", 20)
    assert change(b) == ("period_rating", 1800, 1790, -10, 41)
    assert a["state"]["pending"] == [] and b["state"]["pending"] == []


def test_example_16_a_late_game() -> None:
    club = Club(*established(("A", 1800), ("B", 1800)))
    a_events = [club.imported["A"]]
    a_events += club.play("A", "B", "1-0", "T")[:1]
    t = club.close("T")
    assert (t["A"]["rating_after"], t["B"]["rating_after"]) == (1810, 1790)
    a_events.append(t["A"])
    late = club.play("A", "B", "1-0", "T")  # g2, however much later
    a, b = late
    assert a["event_id"] == "g2/A"
    assert change(a) == ("period_rating", 1810, 1819, 9, 42)  # E(1810, 1790) = 0.528751 -> +9.43
    assert a["detail"] == detail("T", 1, "1.00", "0.528751", 20)
    assert change(b) == ("period_rating", 1790, 1781, -9, 42)
    assert b["detail"]["tournament_id"] == "T"
    a_events.append(a)
    assert [e["event_id"] for e in a_events] == ["import/A/rapid/1", "g1/A", "period/T/A/rapid", "g2/A"]
    assert [e["seq"] for e in a_events] == [1, 2, 3, 4]
    assert club.ratings.close("T") == []  # ending T again publishes nothing
    assert club.ratings.close("Z") == []  # nor does ending a tournament with no games
    # Z's end is remembered: a game of Z is late, rated at once (section 4).
    a, _ = club.play("A", "B", "1/2-1/2", "Z")
    assert a["kind"] == "period_rating" and a["detail"]["tournament_id"] == "Z"


def test_example_17_overlapping_tournaments() -> None:
    club = Club(*established(("A", 1800), ("B", 1800), ("C", 1800)))
    club.play("A", "C", "1/2-1/2", "S")
    club.play("A", "B", "1-0", "T")
    t = club.close("T")
    assert list(t) == ["A", "B"]
    assert change(t["A"]) == ("period_rating", 1800, 1810, 10, 41)
    assert [entry["tournament_id"] for entry in t["A"]["state"]["pending"]] == ["S"]  # S stays pending
    a_game, c_game = club.play("A", "C", "1-0", "S")
    assert a_game["detail"]["expected"] == D("0.514387")  # recorded with A at 1810
    s = club.close("S")
    assert change(s["A"]) == ("period_rating", 1810, 1820, 10, 43)  # SD 0.485613 -> +9.71
    assert s["A"]["detail"] == detail("S", 2, "1.50", "1.014387", 20)
    # C: 0.5 + 0 against E 0.5 + 0.485613: SD -0.485613 -> -9.71.
    assert change(s["C"]) == ("period_rating", 1800, 1790, -10, 42)
    assert c_game["detail"]["expected"] == D("0.485613")


# --- example 18: bytes


def test_example_18_the_contracts_tornelo_example_byte_for_byte() -> None:
    club = Club(*established(("A", 1800), ("B", 2000)))
    played = club.ratings.apply(game("g1", "A", "B", "1-0", "T1"))
    assert [u.key for u in played.updates] == ["A/rapid", "B/rapid"]
    assert [u.payload for u in played.updates] == [CONTRACT_TORNELO[0], B_G1]
    closed = club.ratings.close("T1")
    assert [u.payload for u in closed] == [CONTRACT_TORNELO[1], B_CLOSE]


def test_example_18_the_seeding_rows_events_byte_for_byte() -> None:
    ratings = Ratings(Engine(TORNELO, Points(1200)))
    payloads = []
    for text in ("A,rapid,1800,40,", "B,rapid,2000,40,1.00"):
        outcome = ratings.seed(parse_seed_row(text.split(",")))
        assert outcome.update is not None
        payloads.append(outcome.update.payload)
    assert payloads == [A_IMPORTED, B_IMPORTED]


def test_golden_provisional_rating_from_a_close() -> None:
    """Example 9's T1 for U: three period_game events (seq 1-3), then the close."""
    club = Club(*established(("B12", 1200), ("B15", 1500), ("B14", 1400)))
    club.play("U", "B12", "1-0", "T1")
    club.play("B15", "U", "1-0", "T1")
    club.play("U", "B14", "1/2-1/2", "T1")
    u = next(x for x in club.ratings.close("T1") if x.key == "U/rapid")
    assert u.payload == (
        b'{"event_id":"period/T1/U/rapid","system":"tornelo","game_id":null,"source_event_id":null,'
        b'"player_id":"U","opponent_id":null,"category":"rapid","kind":"provisional_rating","score":null,'
        b'"rating_before":null,"rating_after":1367.00,"display_before":1200,"display_after":1367,"delta":null,'
        b'"seq":4,"state":{"rating":1367.00,"rated_games":3,"seq":4,"k_modifier":1.00,"performance_sum":4100,'
        b'"pending":[]},"finished_at":null,"detail":{"tournament_id":"T1","games":3,"points":1.50,'
        b'"expected":null,"k_factor":null,"k_modifier":null}}'
    )


def test_golden_one_game_event_provisional_rating_and_period_rating() -> None:
    """Example 14's second game: I (1600, 0 games) beats E (1500) outside tournaments."""
    club = Club("I,rapid,1600,0,", *established(("E", 1500)))
    outcome = club.ratings.apply(game("g1", "I", "E"))
    assert [u.payload for u in outcome.updates] == [
        b'{"event_id":"g1/I","system":"tornelo","game_id":"g1","source_event_id":"e-g1","player_id":"I",'
        b'"opponent_id":"E","category":"rapid","kind":"provisional_rating","score":1,"rating_before":1600.00,'
        b'"rating_after":1900.00,"display_before":1600,"display_after":1900,"delta":300.00,"seq":2,'
        b'"state":{"rating":1900.00,"rated_games":1,"seq":2,"k_modifier":1.00,"performance_sum":1900,"pending":[]},'
        b'"finished_at":"2026-11-10T12:00:00Z","detail":{"tournament_id":null,"games":1,"points":1.00,'
        b'"expected":null,"k_factor":null,"k_modifier":null}}',
        b'{"event_id":"g1/E","system":"tornelo","game_id":"g1","source_event_id":"e-g1","player_id":"E",'
        b'"opponent_id":"I","category":"rapid","kind":"period_rating","score":0,"rating_before":1500.00,'
        b'"rating_after":1493.00,"display_before":1500,"display_after":1493,"delta":-7.00,"seq":2,'
        b'"state":{"rating":1493.00,"rated_games":41,"seq":2,"k_modifier":1.00,"performance_sum":null,"pending":[]},'
        b'"finished_at":"2026-11-10T12:00:00Z","detail":{"tournament_id":null,"games":1,"points":0.00,'
        b'"expected":0.359935,"k_factor":20,"k_modifier":1.00}}',
    ]


def test_golden_one_game_period_rating_with_no_tournament() -> None:
    """Example 15: g1/A."""
    club = Club(*established(("A", 1800), ("B", 1800)))
    a = club.ratings.apply(game("g1", "A", "B")).updates[0]
    assert a.payload == (
        b'{"event_id":"g1/A","system":"tornelo","game_id":"g1","source_event_id":"e-g1","player_id":"A",'
        b'"opponent_id":"B","category":"rapid","kind":"period_rating","score":1,"rating_before":1800.00,'
        b'"rating_after":1810.00,"display_before":1800,"display_after":1810,"delta":10.00,"seq":2,'
        b'"state":{"rating":1810.00,"rated_games":41,"seq":2,"k_modifier":1.00,"performance_sum":null,"pending":[]},'
        b'"finished_at":"2026-11-10T12:00:00Z","detail":{"tournament_id":null,"games":1,"points":1.00,'
        b'"expected":0.500000,"k_factor":20,"k_modifier":1.00}}'
    )


def test_golden_period_game_of_an_unrated_player_and_period_closed() -> None:
    """Example 13's T: P (1500, 5 games) beats unrated U; P's entry holds nothing, U's a performance."""
    club = Club("P,rapid,1500,5,")
    p_game, u_game = club.ratings.apply(game("g1", "P", "U", "1-0", "T")).updates
    assert u_game.payload == (
        b'{"event_id":"g1/U","system":"tornelo","game_id":"g1","source_event_id":"e-g1","player_id":"U",'
        b'"opponent_id":"P","category":"rapid","kind":"period_game","score":0,"rating_before":null,'
        b'"rating_after":null,"display_before":1200,"display_after":1200,"delta":null,"seq":1,'
        b'"state":{"rating":null,"rated_games":0,"seq":1,"k_modifier":1.00,"performance_sum":null,'
        b'"pending":[{"tournament_id":"T","games":0,"points":0.00,"expected":0.000000,"performance_games":1,'
        b'"performance_points":0.00,"performance_sum":1100}]},"finished_at":"2026-11-10T12:00:00Z",'
        b'"detail":{"tournament_id":"T","games":null,"points":null,"expected":null,"k_factor":null,'
        b'"k_modifier":null}}'
    )
    read([p_game])
    p = club.ratings.close("T")[0]
    assert p.payload == (
        b'{"event_id":"period/T/P/rapid","system":"tornelo","game_id":null,"source_event_id":null,'
        b'"player_id":"P","opponent_id":null,"category":"rapid","kind":"period_closed","score":null,'
        b'"rating_before":1500.00,"rating_after":1500.00,"display_before":1500,"display_after":1500,"delta":0.00,'
        b'"seq":3,"state":{"rating":1500.00,"rated_games":5,"seq":3,"k_modifier":1.00,"performance_sum":7500,'
        b'"pending":[]},"finished_at":null,"detail":{"tournament_id":"T","games":0,"points":0.00,'
        b'"expected":null,"k_factor":null,"k_modifier":null}}'
    )


def test_golden_imported_provisional_with_a_modifier() -> None:
    """A provisional row: performance_sum 1500 x 10 = 15000 (example 22), modifier 1.50."""
    outcome = Ratings(Engine(TORNELO, Points(1200))).seed(parse_seed_row(["Q", "blitz", "1500", "10", "1.5"]))
    assert outcome.update is not None
    assert outcome.update.payload == (
        b'{"event_id":"import/Q/blitz/1","system":"tornelo","game_id":null,"source_event_id":null,"player_id":"Q",'
        b'"opponent_id":null,"category":"blitz","kind":"imported","score":null,"rating_before":null,'
        b'"rating_after":1500.00,"display_before":1200,"display_after":1500,"delta":null,"seq":1,'
        b'"state":{"rating":1500.00,"rated_games":10,"seq":1,"k_modifier":1.50,"performance_sum":15000,"pending":[]},'
        b'"finished_at":null,"detail":{"tournament_id":null,"games":null,"points":null,"expected":null,'
        b'"k_factor":null,"k_modifier":null}}'
    )


def test_golden_forced_import_keeps_the_pending_games_valued_when_recorded() -> None:
    """Section 10: an imported event keeps `pending`; the close then counts the E of the recording
    (0.240253, against the 1800 A was) on the new rating: 1900 + 15.19 -> 1915."""
    club = Club(*established(("A", 1800), ("B", 2000)))
    club.ratings.apply(game("g1", "A", "B", "1-0", "T1"))
    row = parse_seed_row(["A", "rapid", "1900", "40", ""])
    assert club.ratings.seed(row).verdict is SeedVerdict.REFUSED  # not forced
    forced = club.ratings.seed(row, force=True)
    assert forced.update is not None
    assert forced.update.payload == (
        b'{"event_id":"import/A/rapid/3","system":"tornelo","game_id":null,"source_event_id":null,"player_id":"A",'
        b'"opponent_id":null,"category":"rapid","kind":"imported","score":null,"rating_before":1800.00,'
        b'"rating_after":1900.00,"display_before":1800,"display_after":1900,"delta":100.00,"seq":3,'
        b'"state":{"rating":1900.00,"rated_games":40,"seq":3,"k_modifier":1.00,"performance_sum":null,'
        b'"pending":[{"tournament_id":"T1","games":1,"points":1.00,"expected":0.240253,"performance_games":1,'
        b'"performance_points":1.00,"performance_sum":2400}]},"finished_at":null,"detail":{"tournament_id":null,'
        b'"games":null,"points":null,"expected":null,"k_factor":null,"k_modifier":null}}'
    )
    closed = {e["player_id"]: e for e in read(club.ratings.close("T1"))}
    assert change(closed["A"]) == ("period_rating", 1900, 1915, 15, 41)


# --- example 19: input and duplicates


@pytest.mark.parametrize("again", ["T2", None, ABSENT], ids=["another-tournament", "null", "absent"])
def test_example_19_a_redelivery_with_another_tournament_is_a_conflicting_duplicate(again: object) -> None:
    club = Club(*established(("A", 1800), ("B", 1800)))
    assert club.ratings.apply(game("g1", "A", "B", "1-0", "T")).verdict is Verdict.APPLIED
    states, records = dict(club.ratings.states), dict(club.ratings.games)
    outcome = club.ratings.apply(game("g1", "A", "B", "1-0", again))
    assert outcome.verdict is Verdict.CONFLICT
    assert outcome.updates == ()
    assert club.ratings.states == states and club.ratings.games == records


def test_example_19_the_same_tournament_again_is_a_duplicate() -> None:
    club = Club(*established(("A", 1800), ("B", 1800)))
    club.ratings.apply(game("g1", "A", "B", "1-0", "T"))
    states = dict(club.ratings.states)
    outcome = club.ratings.apply(game("g1", "A", "B", "1-0", "T"))
    assert outcome.verdict is Verdict.DUPLICATE and outcome.updates == ()
    assert club.ratings.states == states


@pytest.mark.parametrize(("first", "again"), [(None, ABSENT), (ABSENT, None)], ids=["null-absent", "absent-null"])
def test_example_19_null_means_no_tournament(first: object, again: object) -> None:
    club = Club(*established(("A", 1800), ("B", 1800)))
    assert club.ratings.apply(game("g1", "A", "B", "1-0", first)).verdict is Verdict.APPLIED
    assert club.ratings.apply(game("g1", "A", "B", "1-0", again)).verdict is Verdict.DUPLICATE


def line(**changes: Any) -> bytes:
    return json.dumps({**VALID_GAME, "time_control": CONTROLS["rapid"], **changes}).encode()


def close(period: str) -> bytes:
    return json.dumps({"control": "close", "period": period}).encode()


@pytest.mark.parametrize(
    "raw",
    [
        line(tournament_id="bad/id"),
        line(tournament_id=7),
        line(tournament_id=""),
        line(tournament_id="T" * 129),
        line(tournament_id="-T"),
        line(tournament_id="T", control="x"),  # a game with a control key is never a game
        b'{"control":"close","period":""}',
        b'{"control":"close"}',
        b'{"control":"close","period":"T/1"}',
        b'{"control":"close","period":7}',
        close("T" * 129),
        b'{"control":"stop","period":"T1"}',
    ],
)
def test_example_19_bad_input_is_invalid_schema(raw: bytes) -> None:
    with pytest.raises(BadInput) as refused:
        decode_line(TORNELO, raw, 65536)
    assert refused.value.kind is ErrorKind.INVALID_SCHEMA
    assert "\n" not in refused.value.message


@pytest.mark.parametrize(
    ("changes", "skip"),
    [
        ({"rated": False}, "rated_false"),
        ({"termination": "forfeit"}, "forfeit"),
        ({"termination": "aborted"}, "aborted"),
    ],
)
def test_a_tournaments_game_that_does_not_count_changes_nothing_and_is_recorded(
    changes: dict[str, Any], skip: str
) -> None:
    """Section 3: not counted, it publishes nothing and records nothing in T, but it is still
    recorded for duplicates, its tournament one of its facts."""
    club = Club(*established(("A", 1800), ("B", 1800)))
    states = dict(club.ratings.states)
    value = {**json.loads(game("g1", "A", "B", "1-0", "T").model_dump_json()), **changes}
    outcome = club.ratings.apply(TorneloGameFinished.model_validate(value))
    assert outcome.verdict is Verdict.SKIPPED and outcome.skip == skip
    assert outcome.updates == () and club.ratings.states == states
    assert club.ratings.close("T") == []
    again = club.ratings.apply(TorneloGameFinished.model_validate(value))
    assert again.verdict is Verdict.DUPLICATE
    other = club.ratings.apply(TorneloGameFinished.model_validate({**value, "tournament_id": "T2"}))
    assert other.verdict is Verdict.CONFLICT


def test_example_19_close_lines_and_tournament_ids_that_are_valid() -> None:
    rules = TORNELO
    assert decode_line(rules, b'{"control":"close","period":"T1","by":"ops"}', 65536) == TorneloCloseLine(
        control="close", period="T1"
    )
    decoded = decode_line(rules, line(tournament_id=None), 65536)
    assert isinstance(decoded, TorneloGameFinished) and decoded.tournament_id is None
    decoded = decode_line(rules, line(tournament_id="Spring.Open_2026-1"), 65536)
    assert isinstance(decoded, TorneloGameFinished) and decoded.tournament_id == "Spring.Open_2026-1"
    decoded = decode_line(rules, line(tournament_id="T" * 128), 65536)
    assert isinstance(decoded, TorneloGameFinished) and decoded.tournament_id == "T" * 128
    assert decode_line(rules, close("T" * 128), 65536) == TorneloCloseLine(control="close", period="T" * 128)


# --- example 20: invariants (property tests)

PLAYERS = ["A", "B", "C", "P", "U", "V"]
SEEDS = ["A,rapid,1800,40,", "B,rapid,2000,40,1.50", "C,rapid,2250,40,", "P,rapid,1500,5,"]  # U, V unrated


def pairs() -> st.SearchStrategy[tuple[str, str, str]]:
    players = st.lists(st.sampled_from(PLAYERS), min_size=2, max_size=2, unique=True)
    return st.tuples(players, st.sampled_from(["1-0", "1/2-1/2", "0-1"])).map(lambda p: (p[0][0], p[0][1], p[1]))


def run(steps: Sequence[tuple[str, ...]], take: set[str] | None = None) -> list[Update[TorneloState]]:
    """Seeds, then each step: ("game", white, black, result, tournament or "") or ("close", T); with
    `take`, each close closes at once only those ratings, the others by their next game or the end."""
    ratings = Ratings(Engine(TORNELO, Points(1200)))
    updates: list[Update[TorneloState]] = []
    for text in SEEDS:
        seeded = ratings.seed(parse_seed_row(text.split(",")))
        assert seeded.update is not None
        updates.append(seeded.update)
    for number, step in enumerate(steps):
        if step[0] == "close":
            if take is None:
                updates += ratings.close(step[1])
            else:
                updates += ratings.close_some(step[1], lambda key: key in take)
        else:
            _, white, black, result, tournament = step
            at = tournament if tournament else ABSENT
            updates += ratings.apply(game(f"g{number}", white, black, result, at)).updates
    return updates + ratings.finish()


steps = st.lists(
    st.one_of(
        st.tuples(st.just("game"), pairs(), st.sampled_from(["", "S", "T", "W"])).map(lambda s: (s[0], *s[1], s[2])),
        st.tuples(st.just("close"), st.sampled_from(["S", "T", "W"])),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_example_20_the_same_input_twice_gives_the_same_bytes(stream: list[tuple[str, ...]]) -> None:
    assert [u.payload for u in run(stream)] == [u.payload for u in run(stream)]


@settings(max_examples=60, deadline=None)
@given(steps)
def test_example_20_seq_is_gapless_and_each_close_publishes_once_per_rating_with_games(
    stream: list[tuple[str, ...]],
) -> None:
    seqs: dict[str, list[int]] = defaultdict(list)
    holding: dict[str, set[str]] = defaultdict(set)  # tournament -> keys with recorded games not closed
    for event in read(run(stream)):
        key = f"{event['player_id']}/{event['category']}"
        seqs[key].append(event["seq"])
        tournament = event["detail"]["tournament_id"]
        if event["kind"] == "period_game":
            holding[tournament].add(key)
        elif event["event_id"].startswith("period/"):
            assert key in holding[tournament], event["event_id"]  # one close event, for a rating with games
            holding[tournament].discard(key)
    assert all(found == list(range(1, len(found) + 1)) for found in seqs.values())
    closed = {step[1] for step in stream if step[0] == "close"}
    assert not any(holding[t] for t in closed)  # every rating with games of an ended tournament closed


@settings(max_examples=60, deadline=None)
@given(st.lists(pairs(), min_size=1, max_size=12), st.data())
def test_example_20_permuting_a_tournaments_games_changes_no_close_event(
    games: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    stream = [("game", white, black, result, "T") for white, black, result in games]
    shuffled = data.draw(st.permutations(stream))

    def closes(steps: Sequence[tuple[str, ...]]) -> list[bytes]:
        return [u.payload for u in run([*steps, ("close", "T")]) if u.event.event_id.startswith("period/")]

    assert closes(shuffled) == closes(stream)


@settings(max_examples=60, deadline=None)
@given(steps, st.sets(st.sampled_from([f"{p}/rapid" for p in PLAYERS])))
def test_example_20_a_partial_close_gives_every_rating_the_same_events(
    stream: list[tuple[str, ...]], take: set[str]
) -> None:
    def per_key(updates: list[Update[TorneloState]]) -> dict[str, list[bytes]]:
        found: dict[str, list[bytes]] = defaultdict(list)
        for u in updates:
            found[u.key].append(u.payload)
        return dict(found)

    assert per_key(run(stream, take)) == per_key(run(stream))


# --- example 21: the status at the close


def example_21_u(first: str, second: str) -> dict[str, dict[str, Event]]:
    """U seeded 1500 with 18 games; in T U beats a, in S U beats b and c (1500 each)."""
    club = Club("U,rapid,1500,18,", *established(("a", 1500), ("b", 1500), ("c", 1500)))
    t_game = club.play("U", "a", "1-0", "T")[0]
    assert t_game["detail"]["expected"] == D("0.500000")
    assert t_game["state"]["pending"][0]["performance_sum"] == 1900
    club.play("U", "b", "1-0", "S")
    club.play("c", "U", "0-1", "S")
    return {first: club.close(first), second: club.close(second)}


def test_example_21_s_ends_first_and_u_is_established_when_t_ends() -> None:
    closes = example_21_u("S", "T")
    s, t = closes["S"]["U"], closes["T"]["U"]
    assert change(s) == ("provisional_rating", 1500, 1540, 40, 20)  # (27000 + 3800) / 20
    assert s["state"]["performance_sum"] is None
    assert change(t) == ("period_rating", 1540, 1550, 10, 21)  # (1 - 0.5) x 20
    assert t["detail"] == detail("T", 1, "1.00", "0.500000", 20)


def test_example_21_t_ends_first_and_u_stays_provisional_until_s() -> None:
    closes = example_21_u("T", "S")
    t, s = closes["T"]["U"], closes["S"]["U"]
    assert change(t) == ("provisional_rating", 1500, 1521, 21, 19)  # (27000 + 1900) / 19 = 1521.05
    assert t["state"]["performance_sum"] == 28900
    assert change(s) == ("provisional_rating", 1521, 1557, 36, 21)  # 32700 / 21 = 1557.14
    assert s["state"]["performance_sum"] is None


def example_21_v(first: str, second: str) -> dict[str, dict[str, Event]]:
    """Unrated V beats a (1500) in T, then draws twenty games against b (1500) in S."""
    club = Club(*established(("a", 1500), ("b", 1500)))
    club.play("V", "a", "1-0", "T")
    for _ in range(20):
        club.play("b", "V", "1/2-1/2", "S")
    return {first: club.close(first), second: club.close(second)}


def test_example_21_a_game_recorded_while_unrated_never_counts_once_established() -> None:
    closes = example_21_v("S", "T")
    s, t = closes["S"]["V"], closes["T"]["V"]
    assert change(s) == ("provisional_rating", None, 1500, None, 20)  # 30000 / 20
    assert s["state"]["performance_sum"] is None
    assert change(t) == ("period_closed", 1500, 1500, 0, 20)
    assert t["detail"] == detail("T", 0, "0.00", None)


def test_example_21_v_with_t_ending_first() -> None:
    closes = example_21_v("T", "S")
    t, s = closes["T"]["V"], closes["S"]["V"]
    assert change(t) == ("provisional_rating", None, 1900, None, 1)
    assert change(s) == ("provisional_rating", 1900, 1519, -381, 21)  # (1900 + 30000) / 21 = 1519.05


# --- example 22: order and state fields


def test_example_22_a_close_publishes_in_the_byte_order_of_the_keys() -> None:
    club = Club(*established(("B", 1800), ("a", 1800), ("a.x", 1800), ("b", 1800)))
    club.play("B", "a", "1-0", "T")
    club.play("a.x", "b", "1-0", "T")
    ids = [u.event.event_id for u in club.ratings.close("T")]
    assert ids == ["period/T/B/rapid", "period/T/a.x/rapid", "period/T/a/rapid", "period/T/b/rapid"]


def test_example_22_a_game_first_closes_its_players_for_an_ended_tournament() -> None:
    def played(partial: bool) -> list[Update[TorneloState]]:
        club = Club(*established(("A", 1800), ("D", 1800), ("X", 1800)))
        club.ratings.apply(game("g0", "A", "D", "1-0", "T"))
        club.ratings.apply(game("g1", "X", "A", "1/2-1/2", "T"))
        if partial:  # T marked ended, its close in progress has reached neither A nor D
            assert club.ratings.close_some("T", lambda key: False) == []
            updates = list(club.ratings.apply(game("g", "A", "D")).updates)
            return updates + club.ratings.finish()
        return club.ratings.close("T") + list(club.ratings.apply(game("g", "A", "D")).updates)

    partial = played(partial=True)
    events = read(partial)
    assert [e["event_id"] for e in events] == [
        "period/T/A/rapid",
        "period/T/D/rapid",
        "g/A",
        "g/D",
        "period/T/X/rapid",  # the rest of the close, when it finishes
    ]
    # The game saw both players closed: A 1800 + (1.5 - 1.0) x 20 = 1810, D 1790.
    assert [change(e) for e in events[:4]] == [
        ("period_rating", 1800, 1810, 10, 42),
        ("period_rating", 1800, 1790, -10, 41),
        ("period_rating", 1810, 1819, 9, 43),  # E(1810, 1790) = 0.528751
        ("period_rating", 1790, 1781, -9, 42),
    ]

    def per_key(updates: list[Update[TorneloState]]) -> dict[str, list[bytes]]:
        found: dict[str, list[bytes]] = defaultdict(list)
        for u in updates:
            found[u.key].append(u.payload)
        return dict(found)

    assert per_key(partial) == per_key(played(partial=False))  # per key, rate gives the same events


@pytest.mark.parametrize(("marks", "order"), [(("S", "T"), ["S", "T"]), (("T", "S"), ["T", "S"])])
def test_example_22_a_rating_closes_in_the_order_its_tournaments_were_marked(
    marks: tuple[str, str], order: list[str]
) -> None:
    """A's T game comes before its S game (pending holds T first); both marked ended, then A's next
    game closes A for each, in the order they were marked, then B (T), then the game."""
    club = Club(*established(("A", 1800), ("B", 1800), ("C", 1800)))
    club.ratings.apply(game("g1", "A", "B", "1-0", "T"))
    club.ratings.apply(game("g2", "A", "C", "1-0", "S"))
    assert [e.tournament_id for e in club.ratings.state("A/rapid").pending] == ["T", "S"]
    engine = club.ratings.engine
    calendar = engine.marked(engine.marked(club.ratings.calendar, marks[0]), marks[1])
    states = {key: club.ratings.state(key) for key in ("A/rapid", "B/rapid")}
    outcome = engine.apply(game("g3", "A", "B"), states, None, None, calendar, club.ratings.state)
    events = read(outcome.updates)
    assert [e["event_id"] for e in events] == [
        f"period/{order[0]}/A/rapid",
        f"period/{order[1]}/A/rapid",
        "period/T/B/rapid",
        "g3/A",
        "g3/B",
    ]
    assert [change(e) for e in events[:2]] == [
        ("period_rating", 1800, 1810, 10, 41),
        ("period_rating", 1810, 1820, 10, 42),
    ]


def test_example_22_close_lines_close_a_rating_in_their_order_whatever_its_first_games() -> None:
    club = Club(*established(("A", 1800), ("B", 1800), ("C", 1800)))
    club.play("A", "B", "1-0", "T")
    club.play("A", "C", "1-0", "S")
    s = club.close("S")
    assert s["A"]["state"]["pending"][0]["tournament_id"] == "T"
    t = club.close("T")
    assert (s["A"]["seq"], t["A"]["seq"]) == (4, 5)


def test_example_22_performance_sum() -> None:
    club = Club("I,rapid,1600,0,", "Q,rapid,1500,10,", *established(("E", 1500)))
    assert club.imported["E"]["state"]["performance_sum"] is None  # established
    assert club.imported["I"]["state"]["performance_sum"] == 0
    assert club.imported["Q"]["state"]["performance_sum"] == 15000
    (u,) = club.play("I", "U")
    assert u["state"]["performance_sum"] == 1200  # provisional after his first event
    i, _ = club.play("I", "E")
    assert i["state"]["performance_sum"] == 1900
    # An unrated player's state: null.
    (n,) = [e for e in club.play("N", "E", "1-0", "T") if e["player_id"] == "N"]
    assert n["state"]["rating"] is None and n["state"]["performance_sum"] is None
