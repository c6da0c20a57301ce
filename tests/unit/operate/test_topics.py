"""The topics' settings: what operators rely on for rebuilds, changelogs, dead letters and
tornelo's tournament ends."""

from worker.operate.topics import DAY_MS, topic_specs
from worker.settings import WorkerSettings
from worker.systems.registry import BUILT_IN, BY_NAME


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


def test_tornelo_also_gets_its_tournament_topic_one_partition_kept_for_good_and_no_other_system_does() -> None:
    *three, ends = topic_specs(WorkerSettings(system="tornelo"), partitions=12, replication=3)
    assert [t.name for t in three] == list(BY_NAME["tornelo"].names[:3])
    assert (ends.name, ends.partitions) == ("arena.tournament.finished.v1", 1)
    assert ends.config == {"min.insync.replicas": "2", "retention.ms": "-1", "cleanup.policy": "delete"}
    given = WorkerSettings(system="tornelo", topic_tournaments="platform.ends")
    assert topic_specs(given, 12, 3)[-1].name == "platform.ends"
    for other in BUILT_IN:
        if other.name != "tornelo":
            assert len(topic_specs(WorkerSettings(system=other.name, topic_tournaments="platform.ends"), 12, 3)) == 3
