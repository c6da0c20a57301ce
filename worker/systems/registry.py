"""The rating systems a deployment can run (`RATING_SYSTEM`): the one place that lists them.

`BUILT_IN` holds the specs of the systems of this package, in the order the documentation
presents them. `spec_of` gives a deployment's spec: a built-in system by its name, or a system
defined outside this package by `package.module:ATTRIBUTE`, the import path of its
`SystemSpec` (docs/adding-a-system.md). Nothing registers itself: a module loaded this way is
imported when a command reads its settings, and its spec is checked like a built-in one (its
names may collide with no built-in system's).
"""

import importlib
import re
from typing import Any

from worker.engine.spec import SystemSpec
from worker.systems.arena.spec import SPEC as ARENA
from worker.systems.fide.spec import SPEC as FIDE
from worker.systems.glicko2.spec import SPEC as GLICKO2
from worker.systems.tornelo.spec import SPEC as TORNELO
from worker.systems.uscf_cc.spec import SPEC as USCF_CC

__all__ = [
    "ARENA",
    "BUILT_IN",
    "BY_NAME",
    "DEFAULT",
    "FIDE",
    "GLICKO2",
    "TORNELO",
    "USCF_CC",
    "UnknownSystem",
    "spec_of",
]

BUILT_IN: tuple[SystemSpec[Any], ...] = (ARENA, USCF_CC, GLICKO2, FIDE, TORNELO)
BY_NAME: dict[str, SystemSpec[Any]] = {spec.name: spec for spec in BUILT_IN}
DEFAULT = ARENA.name  # RATING_SYSTEM's default, and the owner of a key prefix from before owners existed

# `package.module:ATTRIBUTE`: dotted Python identifiers, then one identifier.
_REFERENCE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
# A system's name: what it is called in metrics labels, owner keys and contract v2's `system`.
_NAME = re.compile(r"[a-z][a-z0-9-]{0,30}")


class UnknownSystem(ValueError):
    """A `RATING_SYSTEM` that names no built-in system and loads no spec: one line says why."""


def spec_of(value: str) -> SystemSpec[Any]:
    """The spec `RATING_SYSTEM=value` names; UnknownSystem says why there is none."""
    if value in BY_NAME:
        return BY_NAME[value]
    if not _REFERENCE.fullmatch(value):
        raise UnknownSystem(
            f"{value!r} is neither a rating system ({', '.join(BY_NAME)}) nor package.module:SPEC, "
            "the import path of a system's spec"
        )
    module_name, _, attribute = value.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UnknownSystem(f"{value}: cannot import {module_name} ({e})") from None
    spec = getattr(module, attribute, None)
    if not isinstance(spec, SystemSpec):
        raise UnknownSystem(f"{value}: {module_name} has no SystemSpec named {attribute}")
    if not _NAME.fullmatch(spec.name):
        raise UnknownSystem(f"{value}: its name {spec.name!r} is not 1-31 of a-z, 0-9 and -, starting with a letter")
    if spec.name in BY_NAME:
        raise UnknownSystem(f"{value}: its name {spec.name} is a built-in system's")
    return spec
