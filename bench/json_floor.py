"""The JSON floor of the offline replay: what reading and writing the same JSON costs, and nothing else.

    .venv/bin/python bench/json_floor.py GAMES.jsonl [--out /dev/null]

For each line: `json.loads` (stdlib), and for each line that parses to an object, two compact
`json.dumps` of a rating-changed-shaped event (the contract's 17 fields, the state nested), each
written as a line. No validation, no rules, no state: a replay can only be slower than this
with the stdlib, so `bench/replay_bench.py` prints `rate`'s speed as a ratio to it, measured in
the same run on the same file. Prints `floor: N lines in S s`.
"""

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def event(game: dict[str, Any], player: object, opponent: object) -> dict[str, Any]:
    return {
        "event_id": f"{game.get('game_id')}/{player}",
        "game_id": game.get("game_id"),
        "source_event_id": game.get("event_id"),
        "player_id": player,
        "opponent_id": opponent,
        "category": "blitz",
        "kind": "rated_game",
        "score": 1,
        "rating_before": 1500.25,
        "rating_after": 1510.25,
        "display_before": 1500,
        "display_after": 1510,
        "delta": 10.0,
        "k_factor": 20,
        "expected_score": 0.5,
        "seq": 2,
        "state": {"status": "rated", "rating": 1510.25, "rated_games": 31, "qualifying": [], "seq": 2},
        "finished_at": game.get("finished_at"),
    }


def floor(games: Path, out: Path) -> int:
    lines = 0
    with games.open("rb") as source, out.open("w", encoding="utf-8") as sink:
        for line in source:
            lines += 1
            try:
                game = json.loads(line)
            except ValueError:
                continue
            if not isinstance(game, dict):
                continue
            white, black = game.get("white_id"), game.get("black_id")
            sink.write(json.dumps(event(game, white, black), separators=(",", ":"), ensure_ascii=False) + "\n")
            sink.write(json.dumps(event(game, black, white), separators=(",", ":"), ensure_ascii=False) + "\n")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("games", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/dev/null"))
    args = parser.parse_args()
    started = time.perf_counter()
    lines = floor(args.games, args.out)
    print(f"floor: {lines} lines in {time.perf_counter() - started:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
