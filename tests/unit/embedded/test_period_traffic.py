"""The traffic of the per-period systems (`fide`, `tornelo`): deterministic streams whose every line is
a valid game or close line of the system; fide's months closed in order with held and late games;
tornelo's overlapping tournaments, their closes and late games; seeding files valid by the "Seeding
rows" of docs/systems/fide.md and docs/systems/tornelo.md (checked here with patterns written from
them); no game dated later than the moment it is made."""

import json
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

from schemas.close_line import FideCloseLine, TorneloCloseLine
from schemas.system_game import SystemGameFinished
from schemas.tornelo_game import TorneloGameFinished
from worker.embedded.traffic import traffic
from worker.systems.arena.traffic import ArenaSimulation
from worker.systems.fide.traffic import FideSimulation
from worker.systems.registry import BY_NAME
from worker.systems.tornelo.traffic import TorneloSimulation

MODELS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "fide": (SystemGameFinished, FideCloseLine),
    "tornelo": (TorneloGameFinished, TorneloCloseLine),
}
ID = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}"
CATEGORY = r"(?:rapid|blitz|bullet)"
INTEGER = r"[0-9]+"
DECIMAL = r"[0-9]+(?:\.[0-9]{1,2})?"
# The "Seeding rows" of docs/systems/fide.md and docs/systems/tornelo.md: the fields of each system's
# rows, as written there.
FIDE_ROW = re.compile(
    rf"(?P<player>{ID}),(?P<category>{CATEGORY}),(?P<rating>{INTEGER}),(?P<games>{INTEGER}),"
    r"(?P<reached>true|false|),(?P<birth>[0-9]{4}|)",
    re.ASCII,
)
TORNELO_ROW = re.compile(
    rf"(?P<player>{ID}),(?P<category>{CATEGORY}),(?P<rating>{INTEGER}),(?P<games>{INTEGER}),(?P<k>{DECIMAL}|)",
    re.ASCII,
)
TOURNAMENT_SIZE = 40


def lines_of(sim: ArenaSimulation, games: int, bad: float = 0.0, redeliveries: float = 0.0) -> list[bytes]:
    return list(sim.game_lines(games, bad, redeliveries))


def parsed(lines: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def finished(game: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(game["finished_at"])


@pytest.fixture(scope="module")
def fide_stream() -> list[dict[str, Any]]:
    return parsed(lines_of(FideSimulation(60, seed=5), 6000, redeliveries=0.02))


@pytest.fixture(scope="module")
def tornelo_stream() -> list[dict[str, Any]]:
    sim = TorneloSimulation(400, seed=5, tournament_size=TOURNAMENT_SIZE)
    return parsed(lines_of(sim, 6000, redeliveries=0.02))


@pytest.mark.parametrize("system", ["fide", "tornelo"])
def test_the_same_random_seed_makes_the_same_bytes(system: str) -> None:
    def made(seed: int) -> tuple[str, bytes]:
        sim = traffic(BY_NAME[system])(50, seed=seed)
        return sim.seed_csv(), b"\n".join(lines_of(sim, 3000, bad=0.02, redeliveries=0.02))

    assert made(11) == made(11)
    assert made(11) != made(12)


@pytest.mark.parametrize("system", ["fide", "tornelo"])
def test_every_line_is_a_valid_game_or_close_line_of_the_system(system: str) -> None:
    game_model, close_model = MODELS[system]
    kinds: Counter[str] = Counter()
    for line in lines_of(traffic(BY_NAME[system])(80, seed=3), 4000, redeliveries=0.02):
        if "control" in json.loads(line):
            close_model.model_validate_json(line)
            kinds["close"] += 1
        else:
            game_model.model_validate_json(line)
            kinds["game"] += 1
    assert kinds["game"] > 4000
    assert kinds["close"] >= 5


@pytest.mark.parametrize("system", ["fide", "tornelo"])
def test_bad_lines_include_control_lines_that_are_no_close(system: str) -> None:
    game_model, close_model = MODELS[system]
    bad_controls = 0
    for line in lines_of(traffic(BY_NAME[system])(80, seed=3), 3000, bad=0.1):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "control" in value and value["control"] != "close":
            with pytest.raises(ValueError):
                close_model.model_validate_json(line)
            with pytest.raises(ValueError):
                game_model.model_validate_json(line)
            bad_controls += 1
    assert bad_controls > 0


@pytest.mark.parametrize("system", ["fide", "tornelo"])
def test_a_redelivery_repeats_a_game_line_never_a_close_line(system: str) -> None:
    """A redelivery comes right after its game's line; a close named again on purpose (a close that
    does nothing) comes right after another close."""
    seen: set[bytes] = set()
    previous = b""
    redelivered = 0
    for line in lines_of(traffic(BY_NAME[system])(60, seed=9), 4000, redeliveries=0.05):
        if line in seen:
            if b'"control"' in line:
                assert b'"control"' in previous, f"close line repeated after a game: {line!r}"
            else:
                redelivered += 1
        seen.add(line)
        previous = line
    assert redelivered > 100


def first_deliveries(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream without its redeliveries (a game's line again, later)."""
    seen: set[str] = set()
    kept = []
    for value in stream:
        if "control" not in value:
            if value["game_id"] in seen:
                continue
            seen.add(value["game_id"])
        kept.append(value)
    return kept


def test_fide_closes_the_months_in_order_each_after_its_games(fide_stream: list[dict[str, Any]]) -> None:
    closed: list[str] = []  # the months closed, in order, each once
    again = 0  # closes of a month closed already
    held_before_close: list[int] = []  # per close: games of the month after, before the close
    late_after_close: Counter[str] = Counter()  # per closed month: its games after its close
    newest = "0000-00"
    games_of_next = 0
    # The stream opens with a close of the month before its first game: it sets the latest closed
    # month, so that the first month's games are counted at once (nothing of it is held).
    first = first_deliveries(fide_stream)[0]
    assert first == {"control": "close", "period": "2024-12"}
    for value in first_deliveries(fide_stream)[1:]:
        if "control" in value:
            month = value["period"]
            if closed and month <= closed[-1]:
                again += 1
                continue
            assert not closed or month == next_month(closed[-1]), f"a month skipped before {month}"
            assert newest == next_month(month), f"{month} closed while the games are of {newest}"
            closed.append(month)
            held_before_close.append(games_of_next)
            continue
        month = value["finished_at"][:7]
        if closed and month <= closed[-1]:
            assert month == closed[-1], f"a game of {month} after the close of {closed[-1]}"
            late_after_close[month] += 1
            continue
        assert month >= newest, f"a game of {month} after games of {newest}"
        if month != newest:
            newest, games_of_next = month, 0
        games_of_next += 1
    assert closed[0] == "2025-01"
    assert len(closed) >= 6
    assert again > 0
    assert all(1 <= held <= 10 for held in held_before_close), held_before_close
    assert all(1 <= late_after_close[month] <= 10 for month in closed), late_after_close


def test_fide_spreads_the_stream_evenly_over_a_year_of_months_whatever_its_length() -> None:
    """A 500-game sample and a longer stream both cover the twelve months of 2025, each month
    holding about a twelfth of the games (the benchmark's million games a year of months)."""
    for games in (500, 20_000):
        dated = [finished(g) for g in parsed(lines_of(FideSimulation(40, seed=1), games)) if "control" not in g]
        months = Counter(g.strftime("%Y-%m") for g in dated)
        assert set(months) >= {f"2025-{m:02d}" for m in range(1, 13)}, months
        assert set(months) <= {*(f"2025-{m:02d}" for m in range(1, 13)), "2026-01"}, months
        full = [months[f"2025-{m:02d}"] for m in range(1, 12)]  # December may end early
        assert max(full) < 1.6 * min(full), months


def next_month(month: str) -> str:
    year, number = int(month[:4]), int(month[5:])
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def test_tornelo_runs_tournaments_side_by_side_and_closes_each_after_its_games(
    tornelo_stream: list[dict[str, Any]],
) -> None:
    players: defaultdict[str, set[str]] = defaultdict(set)
    open_tournaments: set[str] = set()
    ended: set[str] = set()
    most_open = closed_again = late = absent = null = 0
    for value in first_deliveries(tornelo_stream):
        if "control" in value:
            tournament = value["period"]
            assert tournament in players, f"{tournament} closed before any game of it"
            if tournament in ended:
                closed_again += 1
            ended.add(tournament)
            open_tournaments.discard(tournament)
            continue
        if "tournament_id" not in value:
            absent += 1
            continue
        tournament = value["tournament_id"]
        if tournament is None:
            null += 1
            continue
        pair = {value["white_id"], value["black_id"]}
        if tournament in ended:
            late += 1
            assert pair <= players[tournament], "a late game between players of another tournament"
            continue
        players[tournament] |= pair
        open_tournaments.add(tournament)
        most_open = max(most_open, len(open_tournaments))
        for player in pair:
            entered = sum(1 for t in open_tournaments if player in players[t])
            assert entered <= 2, f"{player} in {entered} tournaments at once"
    assert most_open >= 2
    assert all(len(found) <= TOURNAMENT_SIZE for found in players.values())
    assert len(ended) >= 10
    assert late > 0
    assert closed_again > 0
    assert absent > 0
    assert null > 0
    assert absent + null < len(tornelo_stream) / 3  # most games are in tournaments


def test_tornelo_tournaments_are_at_most_half_the_players_when_few_play() -> None:
    sim = TorneloSimulation(10, seed=2)
    players: defaultdict[str, set[str]] = defaultdict(set)
    for value in parsed(lines_of(sim, 2000)):
        if "control" not in value and value.get("tournament_id"):
            players[value["tournament_id"]] |= {value["white_id"], value["black_id"]}
    assert players
    assert all(len(found) <= 5 for found in players.values())


def seed_rows(sim: ArenaSimulation, header: str) -> list[str]:
    text = sim.seed_csv()
    assert text.endswith("\n")
    first, *rows = text[:-1].split("\n")
    assert first == header
    return rows


def arena_of(simulation: type[ArenaSimulation], strength_shift: float) -> ArenaSimulation:
    """600 players, their hidden strengths shifted: a strong arena reaches the top of the ranges, a
    weak one their floor."""
    sim = simulation(600, seed=4)
    for player in sim.players:
        player.strength += strength_shift
    return sim


@pytest.mark.parametrize("strength_shift", [0, 1100, -1100])
def test_fide_seeding_rows_are_valid_by_the_contract(strength_shift: float) -> None:
    sim = arena_of(FideSimulation, strength_shift)
    rows = seed_rows(sim, "player_id,category,rating,rated_games,reached_2400,birth_year")
    keys: set[tuple[str, str]] = set()
    games: list[int] = []
    births: dict[str, str] = {}
    reached_over_2400: set[str] = set()
    for row in rows:
        match = FIDE_ROW.fullmatch(row)
        assert match is not None, row
        rating, birth = int(match["rating"]), match["birth"]
        assert rating >= 1400, row
        assert not (match["reached"] == "false" and rating >= 2400), row
        assert birth == "" or 1000 <= int(birth) <= 9999, row
        assert births.setdefault(match["player"], birth) == birth, "one birth year per player"
        if rating >= 2400:
            reached_over_2400.add(match["reached"])
        keys.add((match["player"], match["category"]))
        games.append(int(match["games"]))
    assert len(keys) == len(rows), "a rating seeded twice"
    assert any(g < 30 for g in games)
    assert any(g >= 30 for g in games)
    assert any(b == "" for b in births.values())
    assert any(b and int(b) >= 2008 for b in births.values()), "no junior"
    assert 0.4 < len(births) / 600 < 0.8  # the seeded share; the others start unrated
    if strength_shift > 0:
        assert reached_over_2400 == {"true", ""}


@pytest.mark.parametrize("strength_shift", [0, 1100, -1100])
def test_tornelo_seeding_rows_are_valid_by_the_contract(strength_shift: float) -> None:
    sim = arena_of(TorneloSimulation, strength_shift)
    rows = seed_rows(sim, "player_id,category,rating,rated_games,k_modifier")
    keys: set[tuple[str, str]] = set()
    games: list[int] = []
    modifiers: list[str] = []
    over_2700 = 0
    for row in rows:
        match = TORNELO_ROW.fullmatch(row)
        assert match is not None, row
        rating, played = int(match["rating"]), int(match["games"])
        assert rating >= 100, row
        assert played >= 20 or rating <= 2700, row
        if match["k"]:
            assert Decimal("0.01") <= Decimal(match["k"]) <= Decimal("10.00"), row
        over_2700 += rating > 2700
        keys.add((match["player"], match["category"]))
        games.append(played)
        modifiers.append(match["k"])
    assert len(keys) == len(rows), "a rating seeded twice"
    assert 0 in games
    assert any(0 < g < 20 for g in games)
    assert any(g >= 20 for g in games)
    assert modifiers.count("") > len(modifiers) / 2
    assert any(modifiers)
    assert 0.4 < len({player for player, _ in keys}) / 600 < 0.8
    if strength_shift > 0:
        assert over_2700 > 0


@pytest.mark.parametrize("system", ["fide", "tornelo"])
def test_unseeded_players_play_too(system: str) -> None:
    sim = traffic(BY_NAME[system])(100, seed=6)
    seeded = {row.split(",")[0] for row in sim.seed_csv().splitlines()[1:]}
    playing = {
        value[side]
        for value in parsed(lines_of(sim, 2000))
        if "control" not in value
        for side in ("white_id", "black_id")
    }
    assert playing - seeded
    assert playing & seeded


@pytest.mark.parametrize("simulation", [FideSimulation, TorneloSimulation])
def test_no_game_is_dated_later_than_the_moment_it_is_made(simulation: type[ArenaSimulation]) -> None:
    """Also when the clock starts ten minutes ago: it stops at the present and goes on there."""

    class StartingNow(simulation):  # type: ignore[valid-type,misc]
        START = datetime.now(UTC) - timedelta(minutes=10)

    for sim in (simulation(40, seed=8), StartingNow(40, seed=8)):
        games = [value for value in parsed(lines_of(sim, 3000)) if "control" not in value]
        now = datetime.now(UTC)
        assert all(finished(game) <= now for game in games)
        assert finished(games[-1]) >= finished(games[0])
