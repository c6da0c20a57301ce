"""US Chess correspondence (`uscf-cc`) through the real broker and Redis, seeded through `import`.

- one worker on one partition publishes exactly what `rate` writes, event for event, and
  dead-letters what `rate` dead-letters;
- three workers on six partitions: every game's events recompute from the states before it
  (the rules, from each rating's previous event), with the arena's exact accounting (gapless
  `seq`, byte-identical copies, Redis's states equal to the last events, every game recorded,
  no outbox left); `restore` after Redis lost the states gives back the same states;
- bad input gets a dead letter with its kind and a one-line message, and changes nothing.
"""

import json

import pytest

from tests.support.audit import check_everything, read_store
from tests.support.contract import VALID_GAME
from tests.support.games import keyed
from tests.support.kafka import Record, read_topic
from tests.support.stack import Stack
from tests.support.systems import per_key, rate, seeded, wipe_and_restore

pytestmark = pytest.mark.integration

CC = {"system": "uscf-cc"}  # the system's own names but the stack's topics and group
PREFIX = "rating-uscf-cc:"  # uscf-cc's default RATING_REDIS_KEY_PREFIX


def header(record: Record, name: str) -> str:
    return record.headers[name]


@pytest.mark.timeout(180)
async def test_one_worker_on_one_partition_publishes_what_rate_writes(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    sim, seed = seeded(stack, "uscf-cc", 120, seed=5)
    lines = list(sim.game_lines(3000, bad_share=0.01, redelivery_share=0.01))
    await stack.produce(lines)
    end = await stack.end_offsets(len(lines))
    stack.start_worker(**CC)
    await stack.wait_committed(end, timeout=90)

    expected, expected_letters = rate(stack.tmp, "uscf-cc", seed, lines)
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(expected), timeout=60)
    values = [r.value for r in sorted(published, key=lambda r: (r.partition, r.offset)) if r.value is not None]
    assert len(values) == len(expected) > 3000  # the seeding's and the games' (some games change nothing)
    assert per_key(values) == per_key(expected)
    kinds = {json.loads(v)["kind"] for v in expected}
    assert kinds == {"imported", "rated_game", "first_rating", "game_credit", "forfeit_win"}, kinds
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, len(expected_letters), timeout=30)
    assert [header(r, "error.kind") for r in sorted(letters, key=lambda r: r.offset)] == [
        str(letter["error_kind"]) for letter in expected_letters
    ]


@pytest.mark.timeout(240)
async def test_three_workers_on_six_partitions_account_exactly_and_restore_gives_the_states_back(
    stack: Stack,
) -> None:
    await stack.create_topics(games=6, ratings=4)
    sim, _ = seeded(stack, "uscf-cc", 150, seed=11)
    lines = list(sim.game_lines(6000))
    await stack.produce(lines, keyed(lines))
    end = await stack.end_offsets(len(lines))
    assert len(end) == 6
    for _ in range(3):
        stack.start_worker(**CC)
    await stack.wait_committed(end, timeout=120)
    assert all(w.poll() is None for w in stack.workers)
    tally = await check_everything(stack, lines, "uscf-cc")
    assert {e.kind for e in tally.events.values()} >= {"rated_game", "first_rating", "game_credit", "forfeit_win"}

    # Redis loses the states: `restore` (the workers stopped) writes back the last event's state of each.
    wipe_and_restore(stack, "uscf-cc", lines, at_least=100)


# One bad record per case of docs/systems/uscf-cc.md, "Input" (a `control` key included): the
# expected start of its one-line message. Players b0.. appear in no other record.
BAD: list[tuple[dict[str, object], str]] = [
    ({"termination": "forfeit", "forfeit_kind": "Special"}, "forfeit_kind: Input should be 'ordinary' or 'special'"),
    ({"termination": "forfeit", "forfeit_kind": "quitter"}, "forfeit_kind: Input should be 'ordinary' or 'special'"),
    ({"termination": "forfeit", "forfeit_kind": ""}, "forfeit_kind: Input should be 'ordinary' or 'special'"),
    ({"termination": "forfeit", "forfeit_kind": None}, "forfeit_kind: Input should be 'ordinary' or 'special'"),
    ({"termination": "forfeit", "forfeit_kind": 1}, "forfeit_kind: Input should be 'ordinary' or 'special'"),
    ({"termination": "resignation", "forfeit_kind": "Special"}, "forfeit_kind: Input should be"),
    ({"termination": "resignation", "forfeit_kind": ["special"]}, "forfeit_kind: Input should be"),
    ({"termination": "checkmate", "forfeit_kind": None}, "forfeit_kind: Input should be"),
    (
        {"termination": "forfeit", "forfeit_kind": "special", "result": "1/2-1/2"},
        "value: Value error, a special forfeit (forfeit_kind special) needs a winner",
    ),
    ({"control": "close"}, "value: Value error, an object with a `control` key is a control message, never a game"),
]


async def test_bad_input_gets_a_clear_dead_letter_and_changes_nothing(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    bad = [
        json.dumps({**VALID_GAME, "game_id": f"bad{n}", "white_id": f"b{n}w", "black_id": f"b{n}b", **fields}).encode()
        for n, (fields, _) in enumerate(BAD)
    ]
    bad.append(b'{"control":"close","period":"2026-11"}')  # a close line of `rate` is no game either
    good = json.dumps({**VALID_GAME, "game_id": "good", "white_id": "g1", "black_id": "g2"}).encode()
    await stack.produce([*bad, good])
    end = await stack.end_offsets(len(bad) + 1)
    stack.start_worker(**CC)
    await stack.wait_committed(end, timeout=60)

    letters = sorted(
        await read_topic(stack.broker.bootstrap, stack.dlq_topic, len(bad), timeout=30), key=lambda r: r.offset
    )
    assert [r.value for r in letters] == bad  # the bad records' bytes, in their order
    messages = [(header(r, "error.kind"), header(r, "error.message")) for r in letters]
    expected = [message for _, message in BAD] + ["value: Value error, an object with a `control` key"]
    for (kind, message), start in zip(messages, expected, strict=True):
        assert kind == "invalid_schema"
        assert message.startswith(start) and "\n" not in message, message
    # Nothing written for them: no record, no state, no event; the good game is rated.
    stored = read_store(stack.redis.url, [f"bad{n}" for n in range(len(BAD))] + ["good"], "uscf-cc")
    assert stored.recorded == {"good"}
    assert sorted(stored.states) == ["g1/correspondence", "g2/correspondence"]
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 2, timeout=30)
    assert sorted(json.loads(r.value or b"")["player_id"] for r in published) == ["g1", "g2"]
