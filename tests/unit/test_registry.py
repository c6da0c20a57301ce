"""The registry (worker/systems/registry.py) is the one place that lists the rating systems: each
built-in system's spec holds its parts, a system from outside the package loads by its import
path, and no other module of the worker names a system (docs/adding-a-system.md)."""

import ast
import dataclasses
from pathlib import Path
from typing import Any, cast

import pytest

from tests.outside.flat_elo.rules import FlatEloRules
from tests.outside.flat_elo.spec import SPEC as FLAT_ELO
from worker.engine.spec import SystemSpec
from worker.systems import registry
from worker.systems.arena.rules import ArenaRules
from worker.systems.fide.rules import FideRules
from worker.systems.registry import ARENA, BUILT_IN, BY_NAME, DEFAULT, UnknownSystem, spec_of

WORKER = Path(__file__).resolve().parents[2] / "worker"
# A spec that takes a built-in system's name, and one whose name is not a name: spec_of refuses both.
ARENA_AGAIN = dataclasses.replace(ARENA)


class BadlyNamedRules(FlatEloRules):
    name = "Flat Elo"


BAD_NAME = dataclasses.replace(FLAT_ELO, name="Flat Elo", rules=BadlyNamedRules())


def test_the_built_in_systems_are_the_contracts_five_each_with_its_parts() -> None:
    assert [spec.name for spec in BUILT_IN] == ["arena", "uscf-cc", "glicko2", "fide", "tornelo"]
    assert {spec.name: spec for spec in BUILT_IN} == BY_NAME and DEFAULT == "arena"
    for spec in BUILT_IN:
        assert spec.rules.name == spec.name
        assert spec.codec.unseen == spec.rules.unseen
        assert spec.contract.version == (1 if spec.name == "arena" else 2)  # the contract's table
        assert spec.published
    assert {spec.name for spec in BUILT_IN if spec.periodic} == {"fide", "tornelo"}
    # A per-period system keeps its calendar in the store: it has a codec for it; tornelo's is kept
    # by its marks (it only grows), and its periods end by their records on a topic of their own.
    assert {spec.name for spec in BUILT_IN if spec.calendar_codec is not None} == {"fide", "tornelo"}
    assert {spec.name for spec in BUILT_IN if spec.calendar_codec is not None and spec.calendar_codec.partial} == {
        "tornelo"
    }
    assert {spec.name for spec in BUILT_IN if spec.ends_by_record} == {"tornelo"}


def test_a_system_is_found_by_its_name_or_loaded_by_its_import_path() -> None:
    assert spec_of("glicko2") is BY_NAME["glicko2"]
    assert spec_of("tests.outside.flat_elo.spec:SPEC") is FLAT_ELO
    assert FLAT_ELO.name not in BY_NAME  # loading registers nothing


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("elo", "is neither a rating system (arena, uscf-cc, glicko2, fide, tornelo) nor package.module:SPEC"),
        ("tests.outside.nosuch:SPEC", "cannot import tests.outside.nosuch"),
        ("tests.outside.flat_elo.spec:NOPE", "has no SystemSpec named NOPE"),
        ("tests.outside.flat_elo.rules:NAME", "has no SystemSpec named NAME"),
        ("tests.unit.test_registry:ARENA_AGAIN", "its name arena is a built-in system's"),
        ("tests.unit.test_registry:BAD_NAME", "its name 'Flat Elo' is not 1-31 of a-z, 0-9 and -"),
        ("tests.outside.flat_elo.spec", "nor package.module:SPEC"),
    ],
)
def test_a_value_that_names_no_system_is_refused_with_the_reason(value: str, says: str) -> None:
    with pytest.raises(UnknownSystem) as refused:
        spec_of(value)
    assert says in str(refused.value)


def test_a_spec_must_agree_with_its_rules() -> None:
    with pytest.raises(TypeError, match="periodic=True, but its rules are not a PeriodSystem"):
        dataclasses.replace(ARENA, periodic=True)
    with pytest.raises(TypeError, match="periodic=False, but its rules are a PeriodSystem"):
        dataclasses.replace(ARENA, rules=cast(Any, FideRules()), name="fide")
    with pytest.raises(TypeError, match="its rules are named arena"):
        dataclasses.replace(ARENA, name="elo", rules=ArenaRules())


def system_names_in(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each string literal of `source` that is exactly one of `names`."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def home_of(name: str) -> Path:
    """A built-in system's package folder: where its rules are."""
    module = type(BY_NAME[name].rules).__module__
    return WORKER.parent.joinpath(*module.split(".")[:-1])


def test_no_module_outside_a_systems_package_and_the_registry_names_it() -> None:
    names = set(BY_NAME)
    found = []
    for path in sorted(WORKER.rglob("*.py")):
        if path == Path(registry.__file__):
            continue
        for line, name in system_names_in(path.read_text(encoding="utf-8"), names):
            if not path.is_relative_to(home_of(name)):
                found.append(f"{path.relative_to(WORKER.parent)}:{line}: {name!r}")
    assert found == []


def test_the_literal_check_sees_a_name_and_only_a_whole_one() -> None:
    source = 'SYSTEM = "glicko2"\nif x == "fide": pass\nTOPIC = "arena.rating.changed.v1"\n"""the arena"""\n'
    assert system_names_in(source, set(BY_NAME)) == [(1, "glicko2"), (2, "fide")]
    assert home_of("uscf-cc") == WORKER / "systems" / "uscf_cc"


def test_a_spec_is_a_frozen_value() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ARENA.name = "elo"  # type: ignore[misc]
    assert isinstance(FLAT_ELO, SystemSpec) and not FLAT_ELO.published
