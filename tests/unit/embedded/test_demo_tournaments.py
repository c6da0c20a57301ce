"""tornelo's demo (`worker.embedded.demo_tournaments`, `worker.embedded.tournament_feed`): its
tournaments of several sizes, the stream's lines told apart (a close line becomes an end, a bad
control line stays a game topic's record), and a line per tournament the close follower closes.
The feed on a real broker: tests/integration/embedded/test_tournament_feed.py."""

import json
from collections import defaultdict

from schemas.tournament_finished import TournamentFinished
from worker.embedded.demo_tournaments import LARGEST, DemoTournaments, TournamentCloser
from worker.embedded.tournament_feed import PublishedEnd, close_of, tournament_of
from worker.operate.close_period import CloseReport
from worker.settings import WorkerSettings


def test_the_demo_s_tournaments_are_of_several_sizes_up_to_the_largest_and_overlap() -> None:
    sim = DemoTournaments(300, seed=4)
    assert sim.tournament_size == LARGEST
    players: dict[str, set[str]] = defaultdict(set)
    running: set[str] = set()
    ended: set[str] = set()
    most_at_once = 0
    for line in sim.game_lines(20_000):
        if (closed := close_of(line)) is not None:
            running.discard(closed)
            ended.add(closed)
            continue
        value = json.loads(line)
        tournament = value.get("tournament_id")
        if isinstance(tournament, str) and tournament not in ended:  # not a late game
            players[tournament] |= {value["white_id"], value["black_id"]}
            running.add(tournament)
            most_at_once = max(most_at_once, len(running))
    sizes = [len(p) for p in players.values()]
    assert len(sizes) > 20 and min(sizes) >= LARGEST // 4 - 1 and max(sizes) <= LARGEST  # a bye may leave one out
    assert len(set(sizes)) > 10, sorted(sizes)
    assert most_at_once > 2


def test_a_close_line_is_an_end_and_any_other_line_a_record_naming_its_tournament_or_none() -> None:
    assert close_of(b'{"control":"close","period":"t000003"}') == "t000003"
    for line in (b'{"control":"stop","period":"t000003"}', b'{"control":"close"', b'{"event_id":"e1"}', b"\xff\xfe"):
        assert close_of(line) is None, line
    game = b'{"event_id":"e1","finished_at":"2026-06-01T09:00:00.000Z","tournament_id":"t000003"}'
    assert tournament_of(game) == ("t000003", "2026-06-01T09:00:00.000Z")
    for line in (b'{"event_id":"e1","tournament_id":null}', b'{"event_id":"e1"}', b"[1]", b'{"event_id"', b"\xff"):
        assert tournament_of(line) is None, line


def test_the_closer_says_each_tournament_the_follower_closes_in_one_line() -> None:
    said: list[str] = []
    closer = TournamentCloser(WorkerSettings(system="tornelo", metrics_port=0), said.append)
    closer.published(PublishedEnd("t000002", 0, ((0, 4), (1, 7)), 0.0))
    for line in (
        "close-period: following arena.tournament.finished.v1 as rating-worker-tornelo-close",
        "close-period: waiting for the workers to apply the input up to its end (2 behind)",
        "close-period: t000002 marked closed",
    ):
        closer.heard(line)
    end = TournamentFinished(event_id="end-t000002", tournament_id="t000002", finished_at="2026-06-01T09:00:00Z")
    closer.told(end, CloseReport(marked=["t000002"], finished=["t000002"], closed=12, by_games=2))
    closer.told(end, CloseReport())  # the same end read again: its tournament closed already, nothing said
    assert said[0] == "close-period --follow: following arena.tournament.finished.v1 as rating-worker-tornelo-close"
    assert said[1].startswith("close-period --follow: t000002 closed: 14 ratings, ")
    assert said[1].endswith(" s after its end record was acknowledged") and len(said) == 2
    assert closer.status(2, 3) == "tournaments: 2 running, 3 ended, 1 closed (latest t000002)"
