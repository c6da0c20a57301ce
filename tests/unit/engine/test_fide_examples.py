"""FIDE's worked examples (numbered as in the comments and tests' names below, on the rules of
docs/systems/fide.md, "Rules and readings") through the engine: games and close lines driven by
the harness (`Ratings`: a close as `rate`'s close line, `close_some`/`finish` as the service's
close in progress), each event validated by the contract's v2 schema and read back from its JSON,
the numbers compared with the reading's, written here from its text. Examples 1, 2, 4 to 10, 12
to 17; the contract's `fide` example byte for byte (13), and one golden event per kind written by
hand from the tables of docs/systems/fide.md, "State and events, with an example". The arithmetic
alone is tests/unit/rules/test_fide.py's."""

import json
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.rating_changed_periods import FideRatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2
from schemas.system_game import SystemGameFinished
from tests.support.contract import VALID_GAME
from tests.support.ratings import Ratings
from tests.support.v2_examples_periods import (
    CONTRACT_FIDE,
    FIDE_CLOSE_B,
    FIDE_COUNTED_PENDING,
    FIDE_GAME_B,
    FIDE_GAME_B_HELD_PENDING,
    FIDE_HELD_PENDING,
    FIDE_IMPORT_A,
    FIDE_IMPORT_B,
)
from worker.engine.engine import Engine, SeedVerdict, Update, Verdict
from worker.rules.hundredths import Points
from worker.rules.interface import SeedRow, Skip
from worker.systems.fide.rules import FideState, parse_seed_row
from worker.systems.registry import FIDE

ENGINE = Engine(FIDE, Points(1200))  # the training rating: RATING_TRAINING_RATING's default
NOV, DEC = "2026-11", "2026-12"
AT = "2026-11-10T12:00:00Z"  # a game of November
D = Decimal
Event = dict[str, Any]
Player = tuple[str, int] | tuple[str, int, int] | tuple[str, int, int, str]


def seeded(*players: Player, category: str = "blitz") -> Ratings[FideState]:
    """Section 11's players: (id, rating[, rated games (40)[, birth year]]), `reached_2400` left
    empty in the row (rating >= 2400)."""
    store = Ratings(ENGINE)
    seed(store, *players, category=category)
    return store


def seed(store: Ratings[FideState], *players: Player, category: str = "blitz") -> None:
    for player in players:
        name, rating = player[0], player[1]
        games = player[2] if len(player) > 2 else 40
        birth = player[3] if len(player) > 3 else ""
        assert store.seed(row(f"{name},{category},{rating},{games},,{birth}")).verdict is SeedVerdict.IMPORTED


def row(text: str) -> SeedRow:
    """A seeding row as the file writes it."""
    return parse_seed_row(text.split(","))


def game(gid: str, white: str, black: str, result: str = "1-0", at: str = AT, base: int = 180) -> SystemGameFinished:
    """A counted game (3+0 blitz unless `base` says), input event id `e-{gid}`."""
    value = {
        **VALID_GAME,
        "event_id": f"e-{gid}",
        "game_id": gid,
        "white_id": white,
        "black_id": black,
        "result": result,
        "finished_at": at,
        "time_control": {"base_seconds": base, "increment_seconds": 0},
    }
    return SystemGameFinished.model_validate(value)


def read(update: Update[FideState]) -> Event:
    """The event as the contract reads it: valid v2, a `fide` event, its numbers exact."""
    assert isinstance(RATING_CHANGED_V2.validate_json(update.payload), FideRatingChanged), update.payload
    event: Event = json.loads(update.payload, parse_float=Decimal)
    assert update.key == f"{event['player_id']}/{event['category']}"
    return event


def events(updates: Iterable[Update[FideState]]) -> list[Event]:
    return [read(u) for u in updates]


def play(store: Ratings[FideState], *games: SystemGameFinished) -> list[Event]:
    """Each game applied (each records both players), their events in order."""
    out = []
    for g in games:
        outcome = store.apply(g)
        assert outcome.verdict is Verdict.APPLIED, outcome
        out += events(outcome.updates)
    return out


def close(store: Ratings[FideState], period: str) -> list[Event]:
    return events(store.close(period))


def by_player(found: list[Event]) -> dict[str, Event]:
    """Close events of one month by player (one each)."""
    players = [e["player_id"] for e in found]
    assert len(set(players)) == len(players), players
    return {e["player_id"]: e for e in found}


def ratings(found: list[Event]) -> list[tuple[str, str, Decimal | None, Decimal | None]]:
    return [(e["event_id"], e["kind"], e["rating_before"], e["rating_after"]) for e in found]


def detail(
    period: str, games: int | None = None, points: str | None = None, expected: str | None = None, k: int | None = None
) -> dict[str, Any]:
    """An event's `detail` as the contract's kinds table sets it, the totals exact."""
    return {
        "period": period,
        "games": games,
        "points": None if points is None else D(points),
        "expected": None if expected is None else D(expected),
        "k_factor": k,
    }


def assert_recorded(found: list[Event], period: str = NOV) -> None:
    """period_game events: no rating changed (delta 0.00, or null while unrated), the period set."""
    for e in found:
        assert e["kind"] == "period_game"
        assert e["rating_after"] == e["rating_before"]
        assert e["delta"] == (None if e["rating_before"] is None else D("0.00"))
        assert e["detail"] == detail(period)


# --- 1. One period, four rated players


EXAMPLE_1 = (("A", 2000, 35), ("B", 1900), ("C", 2100), ("D", 2450))


def example_1_games() -> list[SystemGameFinished]:
    return [game("g1", "A", "B", "1-0"), game("g2", "C", "A", "1/2-1/2"), game("g3", "A", "D", "0-1")]


def example_1() -> tuple[Ratings[FideState], list[Event]]:
    store = seeded(*EXAMPLE_1)
    return store, play(store, *example_1_games())


def test_example_1_one_period_four_rated_players() -> None:
    store, recorded = example_1()
    assert [e["event_id"] for e in recorded] == ["g1/A", "g1/B", "g2/C", "g2/A", "g3/A", "g3/D"]
    assert_recorded(recorded)
    assert [e["rating_before"] for e in recorded] == [D(2000), D(1900), D(2100), D(2000), D(2000), D(2450)]
    closes = close(store, NOV)
    assert ratings(closes) == [
        ("period/2026-11/A/blitz", "period_rating", D(2000), D(2008)),
        ("period/2026-11/B/blitz", "period_rating", D(1900), D(1893)),
        ("period/2026-11/C/blitz", "period_rating", D(2100), D(2097)),
        ("period/2026-11/D/blitz", "period_rating", D(2450), D(2451)),
    ]
    a, b, c, d = closes
    assert a["state"]["rated_games"] == 38
    assert a["detail"] == detail(NOV, 3, "1.50", "1.08", 20)
    assert a["delta"] == D("8.00")
    assert b["detail"] == detail(NOV, 1, "0.00", "0.36", 20)
    assert c["detail"] == detail(NOV, 1, "0.50", "0.64", 20)
    assert d["detail"] == detail(NOV, 1, "1.00", "0.92", 10)
    for e in closes:
        assert e["game_id"] is e["finished_at"] is e["opponent_id"] is e["score"] is None
        assert (e["state"]["closed_period"], e["state"]["pending"]) == (NOV, [])
        assert e["state"]["rating_before_close"] == e["rating_before"]


# --- 2. K x n <= 700


def test_example_2_twenty_wins_k_35_and_k_20() -> None:
    store = seeded(("A", 1800, 10), ("B", 1800))
    play(store, *(game(f"g{i}", "A", "B") for i in range(1, 21)))
    a, b = close(store, NOV)
    assert (a["rating_after"], a["state"]["rated_games"]) == (D(2150), 30)
    assert a["detail"] == detail(NOV, 20, "20.00", "10.00", 35)
    assert (b["rating_after"], b["state"]["rated_games"]) == (D(1600), 60)
    assert b["detail"] == detail(NOV, 20, "0.00", "10.00", 20)


# --- 4. 400-point rule


def test_example_4_a_difference_of_550_counts_as_400() -> None:
    store = seeded(("A", 2500), ("B", 1950))
    play(store, game("g1", "A", "B"))
    a, b = close(store, NOV)
    assert (a["rating_after"], a["detail"]["expected"], a["detail"]["k_factor"]) == (D(2501), D("0.92"), 10)
    assert (b["rating_after"], b["detail"]["expected"], b["detail"]["k_factor"]) == (D(1948), D("0.08"), 20)


# --- 5. 600-point rule


@pytest.mark.parametrize(
    ("a", "b", "a_after", "b_after"),
    [(2601, 2001, 2601, 2001), (2601, 2002, 2602, None), (2600, 2000, 2601, 1998), (2700, 1900, 2700, 1900)],
)
def test_example_5_the_600_point_rule(a: int, b: int, a_after: int, b_after: int | None) -> None:
    store = seeded(("A", a), ("B", b))
    play(store, game("g1", "A", "B"))
    found = by_player(close(store, NOV))
    assert found["A"]["rating_after"] == D(a_after)
    if b_after is not None:
        assert found["B"]["rating_after"] == D(b_after)
    if a_after == a:  # not rated for either player
        for e in found.values():
            assert e["kind"] == "period_closed"
            assert e["detail"] == detail(NOV, 0, "0.00")
            assert e["delta"] == D("0.00")
    else:
        assert [e["kind"] for e in found.values()] == ["period_rating", "period_rating"]


# --- 6. K, first rule that applies


@pytest.mark.parametrize(
    ("at", "period", "k", "j_after"), [(AT, NOV, 40, 2020), ("2027-01-10T12:00:00Z", "2027-01", 20, 2010)]
)
def test_example_6_a_junior_until_the_year_of_his_18th_birthday(at: str, period: str, k: int, j_after: int) -> None:
    store = seeded(("J", 2000, 40, "2008"), ("O", 2000))
    play(store, game("g1", "J", "O", at=at))
    j, o = close(store, period)
    assert (j["player_id"], j["rating_after"], j["detail"]["k_factor"]) == ("J", D(j_after), k)
    assert j["state"]["birth_year"] == 2008
    assert (o["player_id"], o["rating_after"], o["detail"]["k_factor"]) == ("O", D(1990), 20)


def test_example_6_reached_2400_stays_after_a_drop_below_2400() -> None:
    store = seeded(("A", 2402), ("B", 2402))
    play(store, game("g1", "A", "B", "0-1"))
    a, _ = close(store, NOV)
    assert (a["rating_after"], a["detail"]["k_factor"], a["state"]["reached_2400"]) == (D(2397), 10, True)
    play(store, game("g2", "A", "B", "1/2-1/2", at="2026-12-10T12:00:00Z"))
    a, _ = close(store, DEC)
    assert a["detail"]["k_factor"] == 10
    assert a["state"]["reached_2400"] is True


# --- 7. Initial ratings (U unrated, his opponents rated)


def opponents(*ratings_: int) -> list[tuple[str, int]]:
    return [(f"O{i}", rating) for i, rating in enumerate(ratings_, start=1)]


def against(results: list[tuple[str, int, str]], at: str = AT) -> tuple[Ratings[FideState], list[SystemGameFinished]]:
    """U (white) against opponents (id, rating, U's result), the opponents seeded, U never."""
    store = seeded(*((name, rating) for name, rating, _ in results))
    games = [game(f"{name}-{at[:7]}", "U", name, result, at) for name, rating, result in results]
    return store, games


# U's results in example 7a: W 1600, D 1700, D 1800, L 1500, W 1900.
EXAMPLE_7A = [
    ("O1", 1600, "1-0"),
    ("O2", 1700, "1/2-1/2"),
    ("O3", 1800, "1/2-1/2"),
    ("O4", 1500, "0-1"),
    ("O5", 1900, "1-0"),
]


def test_example_7a_five_games_first_rating_1779_and_no_rating_for_the_opponents() -> None:
    results = EXAMPLE_7A
    store, games = against(results)
    recorded = play(store, *games)
    assert_recorded(recorded)
    assert [e["rating_before"] for e in recorded if e["player_id"] == "U"] == [None] * 5
    found = by_player(close(store, NOV))
    u = found.pop("U")
    assert (u["kind"], u["rating_before"], u["rating_after"], u["delta"]) == ("first_rating", None, D(1779), None)
    assert u["detail"] == detail(NOV, 5, "3.00")
    assert (u["state"]["rated_games"], u["state"]["initial"], u["display_after"]) == (5, [], 1779)
    for name, rating, _ in results:  # the game against unrated U is not rated for them
        assert found[name]["kind"] == "period_closed"
        assert (found[name]["rating_after"], found[name]["detail"]) == (D(rating), detail(NOV, 0, "0.00"))


def test_example_7b_four_in_november_then_one_in_december() -> None:
    results = [("O1", 1600, "1-0"), ("O2", 1700, "1/2-1/2"), ("O3", 1800, "1/2-1/2"), ("O4", 1500, "0-1")]
    store, games = against(results)
    seed(store, ("O5", 1900))
    play(store, *games, game("g5", "U", "O5", "1-0", "2026-12-10T12:00:00Z"))
    u = by_player(close(store, NOV))["U"]
    assert (u["kind"], u["rating_after"]) == ("period_closed", None)
    assert u["detail"] == detail(NOV, 4, "2.00")
    assert u["state"]["initial"] == [{"period": NOV, "games": 4, "points": D(2), "ratings": D(6600)}]
    u = by_player(close(store, DEC))["U"]
    assert (u["kind"], u["rating_after"]) == ("first_rating", D(1779))
    assert u["detail"] == detail(DEC, 5, "3.00")  # example 17: November's 4 pooled games and December's one
    assert (u["state"]["rated_games"], u["state"]["initial"]) == (5, [])


def test_example_7c_below_1400_is_not_published_and_the_pool_is_kept() -> None:
    results = [("O1", 1500, "1/2-1/2"), *((f"O{i}", 1500, "0-1") for i in range(2, 6))]
    store, games = against(results)
    play(store, *games)
    u = by_player(close(store, NOV))["U"]
    assert (u["kind"], u["rating_after"], u["display_after"]) == ("period_closed", None, 1200)
    assert u["detail"] == detail(NOV, 5, "0.50")
    assert u["state"]["initial"] == [{"period": NOV, "games": 5, "points": D("0.5"), "ratings": D(7500)}]


def test_example_7d_at_most_2200() -> None:
    store, games = against([(f"O{i}", 2300, "1-0") for i in range(1, 6)])
    play(store, *games)
    u = by_player(close(store, NOV))["U"]
    assert (u["kind"], u["rating_after"], u["state"]["reached_2400"]) == ("first_rating", D(2200), False)


def test_example_7e_a_first_event_scoring_zero_is_disregarded() -> None:
    november = [(f"N{i}", 1800, "0-1") for i in range(1, 4)]
    december = [(f"O{i}", 1800, "1/2-1/2") for i in range(1, 6)]
    store, games = against(november)
    seed(store, *((name, rating) for name, rating, _ in december))
    play(store, *games, *against(december, "2026-12-10T12:00:00Z")[1])
    u = by_player(close(store, NOV))["U"]
    assert (u["kind"], u["detail"], u["state"]["initial"]) == ("period_closed", detail(NOV, 0, "0.00"), [])
    u = by_player(close(store, DEC))["U"]
    assert (u["kind"], u["rating_after"]) == ("first_rating", D(1800))  # not 1690: the zero rule
    assert u["detail"] == detail(DEC, 5, "2.50")


def test_example_7f_a_zero_after_pooled_results_counts() -> None:
    store, games = against([("N1", 1800, "1/2-1/2")])
    december = [(f"O{i}", 1800, "0-1") for i in range(1, 5)]
    seed(store, *((name, rating) for name, rating, _ in december))
    play(store, *games, *against(december, "2026-12-10T12:00:00Z")[1])
    assert by_player(close(store, NOV))["U"]["detail"] == detail(NOV, 1, "0.50")
    u = by_player(close(store, DEC))["U"]
    assert (u["kind"], u["rating_after"], u["detail"]) == ("first_rating", D(1570), detail(DEC, 5, "0.50"))


@pytest.mark.parametrize(("last", "first"), [("2026-11", None), ("2026-10", 1800)], ids=["g", "h"])
def test_example_7g_h_the_pool_spans_26_months(last: str, first: int | None) -> None:
    """4 draws against 1800 in 2024-09, 1 in `last`; one close line for `last` closes both months."""
    old = [(f"O{i}", 1800, "1/2-1/2") for i in range(1, 5)]
    store, games = against(old, "2024-09-10T12:00:00Z")
    seed(store, ("N1", 1800))
    g5 = store.apply(game("g5", "U", "N1", "1/2-1/2", f"{last}-10T12:00:00Z")).updates
    play(store, *games)
    # Held (no month closed yet), a draw written 0.5.
    assert b'"held":[{"opponent_id":"N1","score":0.5}]' in g5[0].payload
    assert read(g5[0])["state"]["pending"][0]["held"] == [{"opponent_id": "N1", "score": D("0.5")}]
    closes = [e for e in close(store, last) if e["player_id"] == "U"]
    assert [e["event_id"] for e in closes] == ["period/2024-09/U/blitz", f"period/{last}/U/blitz"]
    assert closes[0]["detail"] == detail("2024-09", 4, "2.00")
    u = closes[1]
    if first is None:  # g: 2024-09 is older than 2026-11 - 25 months: dropped
        assert (u["kind"], u["detail"]) == ("period_closed", detail(last, 1, "0.50"))
        assert u["state"]["initial"] == [{"period": last, "games": 1, "points": D("0.5"), "ratings": D(1800)}]
    else:  # h: within 26 periods
        assert (u["kind"], u["rating_after"], u["detail"]) == ("first_rating", D(first), detail(last, 5, "2.50"))


def test_example_7_a_game_between_two_unrated_players() -> None:
    store = Ratings(ENGINE)
    play(store, game("g1", "U", "V", "1-0"))
    for e in close(store, NOV):
        assert (e["kind"], e["rating_after"], e["delta"]) == ("period_closed", None, None)
        assert e["detail"] == detail(NOV, 0, "0.00")
        assert e["state"]["initial"] == []


@pytest.mark.parametrize(
    ("changes", "skip"),
    [
        ({"rated": False}, Skip.RATED_FALSE),
        ({"termination": "forfeit"}, Skip.FORFEIT),
        ({"termination": "aborted"}, Skip.ABORTED),
        ({"time_control": {"base_seconds": 259200, "increment_seconds": 0}}, Skip.UNRATED_TIME_CONTROL),
    ],
)
def test_section_3_a_game_that_does_not_count_records_nothing_but_its_id(changes: dict[str, Any], skip: Skip) -> None:
    store = seeded(("A", 2000), ("B", 2000))
    states = dict(store.states)
    value = SystemGameFinished.model_validate({**game("g1", "A", "B").model_dump(mode="json"), **changes})
    outcome = store.apply(value)
    assert (outcome.verdict, outcome.skip, outcome.updates) == (Verdict.SKIPPED, skip, ())
    assert store.states == states
    assert store.apply(value).verdict is Verdict.DUPLICATE  # still recorded for duplicates
    assert store.close(NOV) == []


def test_a_redelivered_game_is_recorded_once() -> None:
    store = seeded(("A", 2000), ("B", 2000))
    play(store, game("g1", "A", "B"))
    again = store.apply(game("g1", "A", "B"))
    assert (again.verdict, again.updates) == (Verdict.DUPLICATE, ())
    assert store.apply(game("g1", "B", "A")).verdict is Verdict.CONFLICT
    assert [e["detail"]["games"] for e in close(store, NOV)] == [1, 1]


# --- 8. Rating lost


def test_example_8_a_rating_below_1400_is_lost() -> None:
    store = seeded(("A", 1405), ("B", 1405))
    play(store, game("g1", "A", "B", "0-1"))
    a, b = close(store, NOV)
    assert (a["kind"], a["rating_after"], a["delta"], a["display_after"]) == ("rating_lost", None, None, 1200)
    assert (a["state"]["rated_games"], a["state"]["reached_2400"], a["state"]["initial"]) == (0, False, [])
    assert a["detail"] == detail(NOV, 1, "0.00", "0.50", 20)
    assert (b["kind"], b["rating_after"]) == ("period_rating", D(1415))
    store = seeded(("A", 1410), ("B", 1410))
    play(store, game("g1", "A", "B", "0-1"))
    a, _ = close(store, NOV)
    assert (a["kind"], a["rating_after"]) == ("period_rating", D(1400))  # exactly 1400 is kept


# --- 9. A late game


def test_example_9_a_late_game_is_rated_in_the_oldest_open_month() -> None:
    store = seeded(("A", 2000), ("B", 2000))
    play(store, game("g1", "A", "B", at="2026-10-20T12:00:00Z"))
    assert [e["rating_after"] for e in close(store, "2026-10")] == [D(2010), D(1990)]
    a, b = play(store, game("g2", "A", "B", at="2026-10-31T23:59:59Z"))
    assert_recorded([a, b])
    assert (a["rating_before"], a["finished_at"]) == (D(2010), "2026-10-31T23:59:59Z")
    # Counted at once: November is the oldest open month, its list known (2010 / 1990, D 20: .53).
    assert a["state"]["pending"] == [
        {"period": NOV, "games": 1, "points": D(1), "expected": D("0.53"), "ratings": D(1990), "held": []}
    ]
    a, b = close(store, NOV)
    assert (a["rating_after"], b["rating_after"]) == (D(2019), D(1981))


# --- 10. November games recorded before October closes


def example_10() -> Ratings[FideState]:
    store = seeded(("A", 2000), ("B", 2000))
    play(store, game("g1", "A", "B", at="2026-10-20T12:00:00Z"), game("g2", "B", "A", at="2026-11-01T00:10:00Z"))
    return store


def test_example_10_november_uses_novembers_list() -> None:
    store = example_10()
    october = store.close("2026-10")
    assert [e["rating_after"] for e in events(october)] == [D(2010), D(1990)]
    november = store.close(NOV)
    assert ratings(events(november)) == [
        ("period/2026-11/A/blitz", "period_rating", D(2010), D(1999)),
        ("period/2026-11/B/blitz", "period_rating", D(1990), D(2001)),
    ]
    assert by_player(events(november))["B"]["detail"] == detail(NOV, 1, "1.00", "0.47", 20)
    # A single close line for November gives the same two closes, October's first.
    assert [u.payload for u in example_10().close(NOV)] == [u.payload for u in (*october, *november)]


# --- 12. A first rating counts from the next list


def test_example_12_a_first_rating_counts_from_the_next_list() -> None:
    store = seeded(("R", 1800), *opponents(1800, 1800, 1800, 1800))
    october = "2026-10-10T12:00:00Z"
    play(
        store,
        *(game(f"g{i}", "U", f"O{i}", "1/2-1/2", october) for i in range(1, 5)),
        game("g5", "U", "R", "1/2-1/2", "2026-10-20T12:00:00Z"),
        game("g6", "R", "U", "1-0", "2026-11-01T00:10:00Z"),  # recorded in November before October closes
    )
    found = by_player(close(store, "2026-10"))
    assert (found["U"]["kind"], found["U"]["rating_after"]) == ("first_rating", D(1800))
    assert found["U"]["detail"] == detail("2026-10", 5, "2.50")
    assert (found["R"]["kind"], found["R"]["detail"]) == ("period_closed", detail("2026-10", 0, "0.00"))
    r, u = close(store, NOV)  # byte order of the keys: R before U
    assert (r["player_id"], r["rating_after"], r["detail"]["k_factor"]) == ("R", D(1810), 20)
    assert (u["player_id"], u["rating_after"], u["detail"]["k_factor"]) == ("U", D(1780), 40)


# --- 13. Bytes: the contract's example, and one golden event per kind


def contract_example(october_closed: bool) -> tuple[list[bytes], list[bytes]]:
    """The example of docs/systems/fide.md, "State and events, with an example": A 2000 and B 1900
    seeded, October closed (or not), g1, November closes. (the imports and g1's events, the close
    events)."""
    store = Ratings(ENGINE)
    imports = []
    for text in ("A,blitz,2000,40,,", "B,blitz,1900,40,,"):
        outcome = store.seed(row(text))
        assert outcome.update is not None
        imports.append(outcome.update.payload)
    if october_closed:
        assert store.close("2026-10") == []  # no games: nothing published
    recorded = store.apply(game("g1", "A", "B", at="2026-11-10T12:00:00Z")).updates
    closes = store.close(NOV)
    events([*recorded, *closes])
    return [*imports, *(u.payload for u in recorded)], [u.payload for u in closes]


def test_example_13_the_contracts_example_byte_for_byte() -> None:
    recorded, closes = contract_example(october_closed=True)
    assert [recorded[2], closes[0]] == CONTRACT_FIDE
    # The events the contract does not print, written from its tables.
    rest = [FIDE_IMPORT_A, FIDE_IMPORT_B, FIDE_GAME_B, FIDE_CLOSE_B]
    assert [recorded[0], recorded[1], recorded[3], closes[1]] == rest


# B's pending entry in FIDE_GAME_B (counted at once), replaced by the held one without October's close.
B_COUNTED_PENDING = (
    b'"pending":[{"period":"2026-11","games":1,"points":0.00,"expected":0.36,"ratings":2000.00,"held":[]}]'
)


def test_example_13_without_octobers_close_the_game_is_held_and_the_close_is_the_same() -> None:
    recorded, closes = contract_example(october_closed=False)
    assert recorded[2] == CONTRACT_FIDE[0].replace(FIDE_COUNTED_PENDING, FIDE_HELD_PENDING)
    assert recorded[2] != CONTRACT_FIDE[0]
    assert B_COUNTED_PENDING in FIDE_GAME_B
    assert recorded[3] == FIDE_GAME_B.replace(B_COUNTED_PENDING, FIDE_GAME_B_HELD_PENDING)
    assert closes == [CONTRACT_FIDE[1], FIDE_CLOSE_B]


# Golden events of each other kind, written by hand from the kinds table of docs/systems/fide.md ("State
# and events, with an example") and the encoding of docs/contract-v2.md ("The per-period systems: `fide`
# and `tornelo`").
RATING_LOST_A = (  # example 8: A 1405 loses to B 1405 (K 20: -10 -> 1395)
    b'{"event_id":"period/2026-11/A/blitz","system":"fide","game_id":null,"source_event_id":null,"player_id":"A",'
    b'"opponent_id":null,"category":"blitz","kind":"rating_lost","score":null,"rating_before":1405.00,'
    b'"rating_after":null,"display_before":1405,"display_after":1200,"delta":null,"seq":3,'
    b'"state":{"rating":null,"rated_games":0,"seq":3,"reached_2400":false,"birth_year":null,'
    b'"closed_period":"2026-11","rating_before_close":1405.00,"pending":[],"initial":[]},"finished_at":null,'
    b'"detail":{"period":"2026-11","games":1,"points":0.00,"expected":0.50,"k_factor":20}}'
)
FIRST_RATING_U = (  # example 7a: U's five games (seq 1-5), then November's close
    b'{"event_id":"period/2026-11/U/blitz","system":"fide","game_id":null,"source_event_id":null,"player_id":"U",'
    b'"opponent_id":null,"category":"blitz","kind":"first_rating","score":null,"rating_before":null,'
    b'"rating_after":1779.00,"display_before":1200,"display_after":1779,"delta":null,"seq":6,'
    b'"state":{"rating":1779.00,"rated_games":5,"seq":6,"reached_2400":false,"birth_year":null,'
    b'"closed_period":"2026-11","rating_before_close":null,"pending":[],"initial":[]},"finished_at":null,'
    b'"detail":{"period":"2026-11","games":5,"points":3.00,"expected":null,"k_factor":null}}'
)
PERIOD_CLOSED_C = (  # example 17: C 2000 plays only unrated U (U wins): games 0
    b'{"event_id":"period/2026-11/C/blitz","system":"fide","game_id":null,"source_event_id":null,"player_id":"C",'
    b'"opponent_id":null,"category":"blitz","kind":"period_closed","score":null,"rating_before":2000.00,'
    b'"rating_after":2000.00,"display_before":2000,"display_after":2000,"delta":0.00,"seq":3,'
    b'"state":{"rating":2000.00,"rated_games":40,"seq":3,"reached_2400":false,"birth_year":null,'
    b'"closed_period":"2026-11","rating_before_close":2000.00,"pending":[],"initial":[]},"finished_at":null,'
    b'"detail":{"period":"2026-11","games":0,"points":0.00,"expected":null,"k_factor":null}}'
)
PERIOD_CLOSED_U = (  # the same close for U: his win against C (2000) pooled, one game: no rating yet
    b'{"event_id":"period/2026-11/U/blitz","system":"fide","game_id":null,"source_event_id":null,"player_id":"U",'
    b'"opponent_id":null,"category":"blitz","kind":"period_closed","score":null,"rating_before":null,'
    b'"rating_after":null,"display_before":1200,"display_after":1200,"delta":null,"seq":2,'
    b'"state":{"rating":null,"rated_games":0,"seq":2,"reached_2400":false,"birth_year":null,'
    b'"closed_period":"2026-11","rating_before_close":null,"pending":[],'
    b'"initial":[{"period":"2026-11","games":1,"points":1.00,"ratings":2000.00}]},"finished_at":null,'
    b'"detail":{"period":"2026-11","games":1,"points":1.00,"expected":null,"k_factor":null}}'
)
IMPORTED_A_AFTER_14 = (  # example 17: after example 14 (A 2020, 11 games), A seeded (forced) at 2100
    b'{"event_id":"import/A/blitz/4","system":"fide","game_id":null,"source_event_id":null,"player_id":"A",'
    b'"opponent_id":null,"category":"blitz","kind":"imported","score":null,"rating_before":2020.00,'
    b'"rating_after":2100.00,"display_before":2020,"display_after":2100,"delta":80.00,"seq":4,'
    b'"state":{"rating":2100.00,"rated_games":11,"seq":4,"reached_2400":false,"birth_year":null,'
    b'"closed_period":"2026-11","rating_before_close":2000.00,"pending":[],"initial":[]},"finished_at":null,'
    b'"detail":{"period":null,"games":null,"points":null,"expected":null,"k_factor":null}}'
)


def test_golden_rating_lost() -> None:
    store = seeded(("A", 1405), ("B", 1405))
    play(store, game("g1", "A", "B", "0-1"))
    assert store.close(NOV)[0].payload == RATING_LOST_A


def test_golden_first_rating() -> None:
    results = EXAMPLE_7A
    store, games = against(results)
    play(store, *games)
    assert [u.payload for u in store.close(NOV) if u.key == "U/blitz"] == [FIRST_RATING_U]


def test_example_17_golden_period_closed_of_a_rated_and_an_unrated_player() -> None:
    """closed_period follows every close event: C gets rating_before_close 2000, U null."""
    store = seeded(("C", 2000))
    play(store, game("g1", "U", "C", "1-0"))
    assert [u.payload for u in store.close(NOV)] == [PERIOD_CLOSED_C, PERIOD_CLOSED_U]


# --- 14. Order of the close


def example_14() -> Ratings[FideState]:
    store = seeded(("A", 2000, 10), ("Z", 2000))
    play(store, game("g1", "A", "Z"))
    return store


@pytest.mark.parametrize("first", ["A/blitz", "Z/blitz"])
def test_example_14_either_order_of_closing_gives_the_same_numbers(first: str) -> None:
    """Z is rated against A's November list rating (2000), whether A is closed before him or not."""
    store = example_14()
    taken = store.close_some(NOV, lambda key: key == first)
    assert [u.key for u in taken] == [first]
    rest = store.finish()
    assert [u.key for u in rest] == [k for k in ("A/blitz", "Z/blitz") if k != first]
    found = by_player(events([*taken, *rest]))
    assert (found["A"]["rating_after"], found["A"]["detail"]["k_factor"]) == (D(2020), 40)
    assert (found["Z"]["rating_after"], found["Z"]["detail"]["expected"]) == (D(1990), D("0.50"))
    assert (found["A"]["state"]["closed_period"], found["A"]["state"]["rating_before_close"]) == (NOV, D(2000))
    # The same bytes as one close line that takes both in the byte order of their keys.
    whole = {u.key: u.payload for u in example_14().close(NOV)}
    assert {u.key: u.payload for u in (*taken, *rest)} == whole


def test_example_17_seeding_after_example_14_keeps_the_closed_period() -> None:
    store = example_14()
    store.close(NOV)
    seeding = row("A,blitz,2100,11,,")
    assert store.seed(seeding).verdict is SeedVerdict.REFUSED  # a rating with state, not forced
    forced = store.seed(seeding, force=True)
    assert forced.verdict is SeedVerdict.IMPORTED and forced.update is not None
    assert forced.update.payload == IMPORTED_A_AFTER_14
    a = read(forced.update)
    assert (a["state"]["closed_period"], a["state"]["rating_before_close"]) == (NOV, D(2000))
    new = store.seed(row("N,blitz,2100,11,,"))
    assert new.update is not None
    n = read(new.update)
    assert (n["state"]["closed_period"], n["state"]["rating_before_close"]) == (None, None)


def test_example_17_a_rating_with_pending_games_is_refused_even_when_forced() -> None:
    store = seeded(("A", 2000), ("B", 2000))
    play(store, game("g1", "A", "B"))
    before = store.state("A/blitz")
    for force in (False, True):
        refused = store.seed(row("A,blitz,2100,40,,"), force=force)
        assert (refused.verdict, refused.update) == (SeedVerdict.REFUSED, None)
    assert store.state("A/blitz") == before


# --- 15. Closes


def test_example_15_one_close_line_closes_every_open_month_oldest_first() -> None:
    store = seeded(("A", 2000), ("B", 2000))
    play(store, game("g1", "A", "B", at="2026-10-10T12:00:00Z"), game("g2", "A", "B"))
    assert [e["event_id"] for e in close(store, NOV)] == [
        "period/2026-10/A/blitz",
        "period/2026-10/B/blitz",
        "period/2026-11/A/blitz",
        "period/2026-11/B/blitz",
    ]
    # The same close twice, or a close of an earlier month: nothing more.
    assert store.close(NOV) == []
    assert store.close("2026-10") == []


def test_example_15_a_game_after_an_empty_close_is_rated_in_the_next_month() -> None:
    store = seeded(("A", 2000), ("B", 2000))
    assert store.close(NOV) == []  # November closed with no game recorded
    a, b = play(store, game("g1", "A", "B", at="2026-11-30T12:00:00Z"))
    assert_recorded([a, b], DEC)
    assert a["finished_at"] == "2026-11-30T12:00:00Z"
    assert [(e["period"], e["games"], e["held"]) for e in a["state"]["pending"]] == [(DEC, 1, [])]
    assert ratings(close(store, DEC)) == [
        ("period/2026-12/A/blitz", "period_rating", D(2000), D(2010)),
        ("period/2026-12/B/blitz", "period_rating", D(2000), D(1990)),
    ]


def test_example_15_a_game_of_march_2027_stays_pending_through_novembers_close() -> None:
    store = seeded(("A", 2000), ("B", 2000), ("C", 2000))
    play(store, game("g1", "A", "B"), game("g2", "A", "C", at="2027-03-10T12:00:00Z"))
    a, b = close(store, NOV)
    assert (a["player_id"], b["player_id"]) == ("A", "B")  # C has no game of November: no event
    march = [("2027-03", [{"opponent_id": "C", "score": 1}])]
    assert [(e["period"], e["held"]) for e in a["state"]["pending"]] == march
    # March: A 2010 against C 2000, D 10 -> .51: +.49 x 20 = 9.8 -> 10.
    assert ratings(close(store, "2027-03")) == [
        ("period/2027-03/A/blitz", "period_rating", D(2010), D(2020)),
        ("period/2027-03/C/blitz", "period_rating", D(2000), D(1990)),
    ]


def test_example_15_each_category_closes_on_its_own() -> None:
    store = seeded(("A", 2000), ("B", 2000))
    seed(store, ("A", 2000), ("B", 2000), category="rapid")
    play(store, game("g1", "A", "B"), game("g2", "B", "A", base=900))
    assert ratings(close(store, NOV)) == [
        ("period/2026-11/A/blitz", "period_rating", D(2000), D(2010)),
        ("period/2026-11/A/rapid", "period_rating", D(2000), D(1990)),
        ("period/2026-11/B/blitz", "period_rating", D(2000), D(1990)),
        ("period/2026-11/B/rapid", "period_rating", D(2000), D(2010)),
    ]


# --- 16. Invariants


def test_example_16_the_same_input_twice_gives_the_same_bytes() -> None:
    runs = []
    for _ in range(2):
        store = seeded(*EXAMPLE_1)
        recorded = [u.payload for g in example_1_games() for u in store.apply(g).updates]
        runs.append([*recorded, *(u.payload for u in store.close(NOV))])
    assert len(runs[0]) == 6 + 4
    assert runs[0] == runs[1]


def test_example_16_permuting_a_periods_games_changes_no_close_event() -> None:
    store, _ = example_1()
    reordered = seeded(*EXAMPLE_1)
    play(reordered, *reversed(example_1_games()))
    assert [u.payload for u in reordered.close(NOV)] == [u.payload for u in store.close(NOV)]


RESULTS = st.sampled_from(["1-0", "0-1", "1/2-1/2"])


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1700, 2399),
    st.integers(1700, 2399),
    st.lists(st.tuples(RESULTS, st.booleans(), st.sampled_from([AT, "2026-11-30T23:59:59Z"])), min_size=1, max_size=10),
    st.booleans(),
)
def test_example_16_two_k20_players_who_only_play_each_other_change_by_opposite_amounts(
    a: int, b: int, games: list[tuple[str, bool, str]], october_closed: bool
) -> None:
    store = seeded(("A", a), ("B", b))
    if october_closed:
        store.close("2026-10")
    for i, (result, a_white, at) in enumerate(games):
        white, black = ("A", "B") if a_white else ("B", "A")
        play(store, game(f"g{i}", white, black, result, at))
    closed_a, closed_b = close(store, NOV)
    assert (closed_a["detail"]["k_factor"], closed_b["detail"]["k_factor"]) == (20, 20)
    assert closed_a["delta"] == -closed_b["delta"]
    assert closed_a["detail"]["expected"] + closed_b["detail"]["expected"] == len(games)


def by_key(updates: Iterable[Update[FideState]]) -> dict[str, list[bytes]]:
    found: dict[str, list[bytes]] = {}
    for u in updates:
        found.setdefault(u.key, []).append(u.payload)
    return found


PLAYERS = ("A", "B", "C", "D")
PAIRS = st.tuples(st.sampled_from(PLAYERS), st.sampled_from(PLAYERS), RESULTS).filter(lambda p: p[0] != p[1])


@settings(max_examples=30, deadline=None)
@given(st.lists(PAIRS, min_size=1, max_size=8), st.lists(PAIRS, max_size=4), st.sets(st.sampled_from(PLAYERS)))
def test_example_16_a_close_taking_some_ratings_gives_each_rating_the_events_of_a_whole_close(
    november: list[tuple[str, str, str]], december: list[tuple[str, str, str]], taken: set[str]
) -> None:
    """November's games, November closed whole or only for the ratings `taken` (the others closed by
    their next game, December's, or by the rest of the close): per rating, the same events."""
    runs = []
    for partial in (False, True):
        store = seeded(("A", 2000), ("B", 1900, 10), ("C", 2450), ("D", 1405))
        out = [u for i, (w, b, r) in enumerate(november) for u in store.apply(game(f"n{i}", w, b, r)).updates]
        out += store.close_some(NOV, lambda key: key.split("/")[0] in taken) if partial else store.close(NOV)
        at = "2026-12-10T12:00:00Z"
        out += [u for i, (w, b, r) in enumerate(december) for u in store.apply(game(f"d{i}", w, b, r, at)).updates]
        out += store.finish()
        events(out)
        runs.append(by_key(out))
    assert runs[0] == runs[1]


# --- 17. Order, state fields


def test_example_17_a_close_is_in_the_byte_order_of_the_keys() -> None:
    store = seeded(("B", 2000), ("a", 2000), ("a.x", 2000), ("b", 2000))
    play(store, game("g1", "B", "a"), game("g2", "a.x", "b"))
    assert [e["event_id"] for e in close(store, NOV)] == [
        "period/2026-11/B/blitz",
        "period/2026-11/a.x/blitz",
        "period/2026-11/a/blitz",
        "period/2026-11/b/blitz",
    ]


def test_example_17_all_of_octobers_close_events_come_before_novembers() -> None:
    store = seeded(("B", 2000), ("a", 2000), ("a.x", 2000), ("b", 2000))
    october = "2026-10-10T12:00:00Z"
    play(store, game("o1", "a", "B", at=october), game("o2", "b", "a.x", at=october))
    play(store, game("g1", "B", "a"), game("g2", "a.x", "b"))
    keys = ["B", "a.x", "a", "b"]
    assert [e["event_id"] for e in close(store, NOV)] == [
        *(f"period/2026-10/{k}/blitz" for k in keys),
        *(f"period/2026-11/{k}/blitz" for k in keys),
    ]


def test_example_17_a_game_first_closes_its_players() -> None:
    """November marked, its close in progress has reached neither A nor B: December's g9 closes
    them first (white's, then black's), then records its own events; the rest of the close then
    closes only the others."""
    store = seeded(("A", 2000), ("B", 2000), ("C", 2000), ("D", 2000))
    play(store, game("g1", "A", "B"), game("g2", "C", "D"))
    nobody: Callable[[str], bool] = lambda key: False  # noqa: E731
    assert store.close_some(NOV, nobody) == []
    g9 = store.apply(game("g9", "A", "B", at="2026-12-05T12:00:00Z"))
    found = events(g9.updates)
    assert [e["event_id"] for e in found] == ["period/2026-11/A/blitz", "period/2026-11/B/blitz", "g9/A", "g9/B"]
    assert [e["rating_after"] for e in found] == [D(2010), D(1990), D(2010), D(1990)]
    assert [e["seq"] for e in found] == [3, 3, 4, 4]
    # g9 is counted at once: December is the oldest open month, its list the ratings after the close.
    assert found[2]["state"]["pending"] == [
        {"period": DEC, "games": 1, "points": D(1), "expected": D("0.53"), "ratings": D(1990), "held": []}
    ]
    assert (found[2]["state"]["closed_period"], found[2]["state"]["rating_before_close"]) == (NOV, D(2000))
    assert [e["event_id"] for e in events(store.finish())] == ["period/2026-11/C/blitz", "period/2026-11/D/blitz"]
