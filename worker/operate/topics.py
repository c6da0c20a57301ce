"""The three topics and their settings (tornelo's four): `rating-worker topics` creates them.

- input: kept for good (`retention.ms=-1`), so that every rating can be rebuilt from it;
- output: compacted, so that it is a changelog (latest event per rating), with a week of
  minimum compaction lag so that consumers that fall behind still see every change;
- dead letters: 30 days, time enough for an operator to look at them and replay them;
- tornelo's tournament ends (`RATING_TOPIC_TOURNAMENTS`): one partition, so that they are read in
  the order the tournaments ended, kept for good (deleted never, compacted never: `restore`
  reads the ends from it).
`min.insync.replicas=2` with `acks=all` and 3 replicas: an acknowledged record survives the
loss of one broker.
"""

from dataclasses import dataclass

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from worker.service.connections import close_quietly, kafka_options
from worker.settings import WorkerSettings
from worker.stream.retry import KAFKA_ADMIN, KAFKA_CONNECT, retrying

DAY_MS = 24 * 3600 * 1000
# The output topic keeps every event at least this long before compaction may drop it: a
# consumer that falls behind by less still sees every change (and `restore` can tell a lost
# event from a compacted one).
COMPACTION_LAG_MS = 7 * DAY_MS


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str]


def topic_specs(settings: WorkerSettings, partitions: int, replication: int) -> list[TopicSpec]:
    durable = {"min.insync.replicas": str(min(2, replication))}
    return [
        TopicSpec(settings.topic_games, partitions, {**durable, "retention.ms": "-1"}),
        TopicSpec(
            settings.topic_ratings,
            partitions,
            {**durable, "cleanup.policy": "compact", "min.compaction.lag.ms": str(COMPACTION_LAG_MS)},
        ),
        TopicSpec(settings.topic_dead_letters, 1, {**durable, "retention.ms": str(30 * DAY_MS)}),
        *tournament_specs(settings, durable),
    ]


def tournament_specs(settings: WorkerSettings, durable: dict[str, str]) -> list[TopicSpec]:
    """tornelo's topic of tournament ends, for a deployment that reads one (none otherwise)."""
    topic = settings.tournament_topic()
    if topic is None:
        return []
    return [TopicSpec(topic, 1, {**durable, "retention.ms": "-1", "cleanup.policy": "delete"})]


async def create(settings: WorkerSettings, partitions: int, replication: int) -> list[str]:
    """Create the topics; return the names created (existing ones are left as they are)."""
    admin = AIOKafkaAdminClient(**kafka_options(settings))
    try:
        await retrying(KAFKA_CONNECT, admin.start)
        existing = set(await retrying(KAFKA_ADMIN, admin.list_topics))
        wanted = [s for s in topic_specs(settings, partitions, replication) if s.name not in existing]
        if wanted:
            new = [NewTopic(s.name, s.partitions, replication, topic_configs=s.config) for s in wanted]
            await retrying(KAFKA_ADMIN, admin.create_topics, new)
        return [s.name for s in wanted]
    finally:
        await close_quietly(admin.close())
