"""A peer of the stream benchmark: Quix Streams with its RocksDB state, calling the project's rules.

    bench/peers/.venv/bin/python bench/peers/quix_peer.py --bootstrap HOST:PORT --seed SEED.csv \\
        --expect N [--guarantee at-least-once|exactly-once]

Run from its own virtual environment (`bench/peers/requirements.txt`: quixstreams pins other
pydantic and confluent-kafka versions than the worker's), with the repository on PYTHONPATH
for the project's rules. What a user of Quix Streams would write for the arena's ratings:

- games are re-keyed by category (`group_by`), so that every update of a rating meets in one
  partition and one state store; this caps the work at three busy partitions (rapid, blitz,
  bullet), whatever the partitions and replicas;
- the ratings live in Quix's state (RocksDB, with its changelog topics), the seeded ones read
  from the seeding file at start (the benchmark's stand-in for an import);
- each game goes through the project's `Engine.apply` against that state, and its events
  go to the output topic, keyed by rating;
- no idempotency records: at-least-once, a redelivered game is applied again (exactly-once
  needs Kafka transactions, which the embedded broker, tansu, does not have).

Prints one JSON line when it has rated `expect` games: the games, and the wall-clock span and
the process's CPU seconds from the first game rated to the last, then keeps running until killed.
"""

import argparse
import json
import time
from pathlib import Path
from typing import Any

from quixstreams import Application, State

from schemas.game_finished import GameFinished
from worker.engine.engine import Engine
from worker.replay.seed_file import read_seed_file
from worker.rules.categories import Category
from worker.rules.hundredths import Points
from worker.systems.arena.codec import decode_state, encode_state
from worker.systems.arena.state import RatingState
from worker.systems.registry import ARENA

GAMES_TOPIC, RATINGS_TOPIC, GROUP = "bench.games", "bench.ratings", "bench"


class Event(bytes):
    """An event's bytes with the key it is published under."""

    key: bytes


class Peer:
    def __init__(self, seed: Path, expect: int) -> None:
        self.engine = Engine(ARENA, Points(1200))
        self.seeded = {
            row.key: RatingState(row.rating, row.rated_games, (), 1) for row in read_seed_file(seed, ARENA.rules)
        }
        self.expect = expect
        self.games = 0
        self.first: tuple[float, float] | None = None  # wall clock, CPU seconds

    def category(self, value: dict[str, Any]) -> str:
        """The repartition key: the game's category (a game that changes nothing: its own key)."""
        classification = self.engine.rules.category(GameFinished.model_validate(value))
        return str(classification) if isinstance(classification, Category) else "skip"

    def rate(self, value: dict[str, Any], state: State[str, str]) -> list[Event]:
        game = GameFinished.model_validate(value)
        classification = self.engine.classify(game)  # once per game, as the worker does
        states = {}
        for rating in classification[1] or ():
            stored = state.get(rating)
            if stored is not None:
                states[rating] = decode_state(stored)
            elif rating in self.seeded:
                states[rating] = self.seeded[rating]
        outcome = self.engine.apply(game, states, None, classification)
        events = []
        for update in outcome.updates:
            state.set(update.key, encode_state(update.state).decode())
            event = Event(update.payload)
            event.key = update.key.encode()
            events.append(event)
        self.count()
        return events

    def count(self) -> None:
        self.games += 1
        if self.first is None:
            self.first = (time.time(), time.process_time())
        if self.games == self.expect:
            wall, cpu = time.time() - self.first[0], time.process_time() - self.first[1]
            print(json.dumps({"games": self.games, "seconds": wall, "cpu_seconds": cpu}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--seed", type=Path, required=True)
    parser.add_argument("--expect", type=int, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--guarantee", choices=["at-least-once", "exactly-once"], default="at-least-once")
    args = parser.parse_args()
    peer = Peer(args.seed, args.expect)
    app = Application(
        broker_address=args.bootstrap,
        consumer_group=GROUP,
        auto_offset_reset="earliest",
        processing_guarantee=args.guarantee,
        state_dir=args.state_dir,
        commit_every=1000,  # as the worker's batches of 1,000 games
        commit_interval=1.0,
        producer_extra_config={"enable.idempotence": args.guarantee == "exactly-once"},
    )
    games = app.topic(GAMES_TOPIC, value_deserializer="json")
    ratings = app.topic(RATINGS_TOPIC, value_serializer="bytes", key_serializer="bytes")
    frame = app.dataframe(games).group_by(peer.category, name="by-category")
    frame = frame.apply(peer.rate, stateful=True, expand=True)
    frame.to_topic(ratings, key=lambda event: event.key)
    app.run()


if __name__ == "__main__":
    main()
