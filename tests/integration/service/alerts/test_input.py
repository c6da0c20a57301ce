"""The alerts of the input, as `test_held_up.py` checks them: bad input dead-lettered, a record
the client cannot read, late games burning the freshness budget, a group that lost its offsets.
"""

import json
import signal
import time

import pytest

from tests.integration.service.alerts.recording import (
    GAMES_PER_SECOND,
    HOURS,
    NEIGHBOUR,
    TROUBLED,
    check_alerts,
    games,
    healthy_feed,
    held_up,
    produce_at,
    published,
    record,
    sample,
    seeded_worker,
    settled,
    start_recorded_worker,
    troubled,
)
from tests.support.batches import NOT_UTF8, RawRecord, produce_raw_batch
from tests.support.prometheus import Recording
from tests.support.stack import Stack

pytestmark = pytest.mark.integration


async def test_bad_input_is_dead_lettered(stack: Stack, neighbour: Recording) -> None:
    worker = await seeded_worker(stack)

    async def feed() -> None:
        await stack.produce([b"{not json", json.dumps({"game_id": 1}).encode()] * 3 + games(2))

    situation = await record(worker, feed)
    check_alerts(stack.tmp, situation, neighbour, [troubled("RatingDeadLetterRate", "warning")])


async def test_a_record_the_client_cannot_read(stack: Stack, neighbour: Recording) -> None:
    """A header key that is not UTF-8 after three games: the partition is paused at it (the games
    before it rated), the games behind it wait; the pause is its own alert, not a stall."""
    worker = await seeded_worker(stack)
    await stack.produce(games(3))
    bad = RawRecord(games(1)[0], None, [(NOT_UTF8, b"v")])
    await produce_raw_batch(stack.broker.bootstrap, stack.games_topic, 0, [bad])
    await settled(lambda: sample(worker, "rating_partition_paused_at_offset", partition="0") == 3, "the pause")
    situation = await record(worker, healthy_feed(stack))
    assert situation.last("rating_partition_paused_at_offset", partition="0") == 3
    check_alerts(stack.tmp, situation, neighbour, held_up(troubled("RatingInputUnreadable", "critical", partition="0")))


async def test_late_games_burn_the_freshness_budget(stack: Stack, neighbour: Recording) -> None:
    """Every game's record is a minute old when the worker sees it: every change is late."""
    worker = await seeded_worker(stack)

    async def feed() -> None:
        await produce_at(
            stack.broker.bootstrap, stack.games_topic, games(GAMES_PER_SECOND), int(time.time() * 1000) - 60_000
        )

    situation = await record(worker, feed)
    assert (situation.last("rating_end_to_end_seconds_count") or 0) > 0
    freshness = {
        "expr": "rating:freshness_errors:ratio_rate1h",
        "eval_time": f"{HOURS}h",
        "exp_samples": [
            {"labels": f'rating:freshness_errors:ratio_rate1h{{job="{job}",namespace="arena"}}', "value": value}
            for job, value in ((NEIGHBOUR["job"], 0), (TROUBLED["job"], 1))
        ],
    }
    check_alerts(
        stack.tmp,
        situation,
        neighbour,
        [troubled("RatingFreshnessBudgetBurn", "critical"), troubled("RatingFreshnessBudgetSlowBurn", "warning")],
        extra=[freshness],
    )


async def test_the_group_lost_its_offsets(stack: Stack, neighbour: Recording) -> None:
    """A worker of a renamed group finds no committed offset but the watermark: it starts there."""
    first = await seeded_worker(stack)
    await stack.produce(games(30))
    end = await stack.games_ends(30, idle=0.3)
    await stack.wait_committed(end)
    assert published(first) > 0
    stack.workers[0].send_signal(signal.SIGTERM)
    stack.workers[0].wait(timeout=30)
    renamed = await start_recorded_worker(stack, kafka_group_id=f"{stack.group}-renamed")
    situation = await record(renamed, healthy_feed(stack))
    assert situation.last("rating_partitions_started_at_watermark_total") == 1
    # Its counter's first sample is already 1 (the assignment comes before the first scrape):
    # the alert fires from the start, and ends 15 minutes on.
    rewound = [troubled("RatingGroupRewound", "warning")]
    check_alerts(stack.tmp, situation, neighbour, rewound, at="1m")
    check_alerts(stack.tmp, situation, neighbour, rewound, at="14m")
    check_alerts(stack.tmp, situation, neighbour, [], at="16m")
