"""The topics' settings: what operators rely on for rebuilds, changelogs and dead letters."""

from worker.operate.topics import DAY_MS, topic_specs
from worker.settings import WorkerSettings


def test_input_is_kept_for_good_output_is_compacted_and_dead_letters_expire() -> None:
    games, ratings, dlq = topic_specs(WorkerSettings(), partitions=12, replication=3)
    assert (games.name, games.partitions, games.config["retention.ms"]) == ("arena.game.finished.v1", 12, "-1")
    assert ratings.name == "arena.rating.changed.v1"
    assert ratings.config["cleanup.policy"] == "compact"
    assert int(ratings.config["min.compaction.lag.ms"]) >= DAY_MS
    assert dlq.name == "arena.game.finished.v1.dlq"
    assert int(dlq.config["retention.ms"]) == 30 * DAY_MS
    assert all(t.config["min.insync.replicas"] == "2" for t in (games, ratings, dlq))


def test_a_single_broker_gets_min_insync_replicas_1() -> None:
    assert all(t.config["min.insync.replicas"] == "1" for t in topic_specs(WorkerSettings(), 4, 1))
