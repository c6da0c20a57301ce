"""The names each rating system (tests/support/contract_systems.py) declares collide with no
other system's where a collision would mix two deployments (docs/operations.md, "Rating
systems side by side"): its name, its output and dead-letter topics, its consumer group, and its Redis key
prefixes (the live one and `rebuild`'s, none nesting in another: a scan of one would read the
other's keys). What a deployment writes lands in no topic another system reads.

Categories, kinds and skip reasons are shared on purpose: one vocabulary (`Kind`, `Skip`, the
arena's categories) whose values mean the same in every system, each rating keyed under its own
system's prefix and published on its own system's topic; within a system each is declared once."""

import dataclasses
from itertools import combinations
from typing import Any

import pytest

from tests.support.contract_systems import SYSTEMS, SystemParts
from worker.rules.interface import Kind, Skip
from worker.settings import name_problems

every_system = pytest.mark.parametrize("system", SYSTEMS, ids=str)


def own_names(system: SystemParts[Any]) -> dict[str, str]:
    """The names no other system may use, by what they name."""
    names = system.names
    return {
        "system": system.name,
        "output topic": names.topic_ratings,
        "dead-letter topic": names.topic_dead_letters,
        "consumer group": names.kafka_group_id,
    }


def prefixes(system: SystemParts[Any]) -> list[str]:
    return [system.names.redis_key_prefix, system.rebuild_prefix]


def collisions(systems: list[SystemParts[Any]]) -> list[str]:
    """Every name two systems share, and every key prefix nesting in another's (or its own other)."""
    found = []
    for a, b in combinations(systems, 2):
        ours, theirs = own_names(a), own_names(b)
        found += [f"{a.name} and {b.name} share the {what} {ours[what]}" for what in ours if ours[what] == theirs[what]]
    everyone = [(s.name, p) for s in systems for p in prefixes(s)]
    for (one, p), (other, q) in combinations(everyone, 2):
        if p.startswith(q) or q.startswith(p):
            found.append(f"the key prefixes {p} ({one}) and {q} ({other}) nest")
    return found


def test_no_two_systems_share_a_name_or_nest_their_key_prefixes() -> None:
    assert len(SYSTEMS) >= 2
    assert collisions(SYSTEMS) == []


def test_a_collision_is_found() -> None:
    """The check above sees a system that takes another's group, or a prefix inside another's."""
    first = SYSTEMS[0]
    names = first.names._replace(kafka_group_id=SYSTEMS[1].names.kafka_group_id)
    twin = dataclasses.replace(first, name="twin", names=names, rebuild_prefix="twin-rebuild:")
    assert collisions([twin, SYSTEMS[1]]) == [
        f"twin and {SYSTEMS[1].name} share the consumer group {SYSTEMS[1].names.kafka_group_id}"
    ]
    inside = first.names.redis_key_prefix + "x:"
    nested = dataclasses.replace(SYSTEMS[1], name="nested", rebuild_prefix=inside)
    assert collisions([first, nested]) == [
        f"the key prefixes {first.names.redis_key_prefix} ({first.name}) and {inside} (nested) nest"
    ]


@every_system
def test_what_a_system_writes_lands_in_no_topic_another_reads(system: SystemParts[Any]) -> None:
    written = {system.names.topic_ratings, system.names.topic_dead_letters}
    read = {other.names.topic_games for other in SYSTEMS}
    read |= {r.value for other in SYSTEMS for r in other.spec.reserved if r.field.startswith("topic_")}
    assert written.isdisjoint(read)
    assert written.isdisjoint({o.names.topic_ratings for o in SYSTEMS if o.name != system.name})
    assert name_problems(system.spec, system.names) == []  # the settings' own check agrees


@every_system
def test_a_system_declares_each_of_its_names_once_from_the_shared_vocabulary(system: SystemParts[Any]) -> None:
    rules = system.rules
    assert rules.name == system.name
    for declared in (rules.categories, rules.kinds, rules.skips, rules.seed_header):
        assert len(set(declared)) == len(declared) > 0, declared
    assert set(rules.kinds) <= set(Kind) and Kind.IMPORTED in rules.kinds
    assert set(rules.skips) <= set(Skip)
    assert rules.paired_kinds <= set(rules.kinds)
    assert set(system.simulation.categories) <= set(rules.categories)
