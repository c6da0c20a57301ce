"""The rating systems a deployment can run (`RATING_SYSTEM`), by name: their rules. The other
layers keep their part of each system under the same names: its event contract
(`worker.engine.contracts`) and its state's Redis encoding (`worker.store.state_codec`)."""

from typing import Any

from worker.rules.arena import ArenaRules
from worker.rules.system import RatingSystem
from worker.rules.uscf_cc import CcRules

RULES: dict[str, RatingSystem[Any]] = {"arena": ArenaRules(), "uscf-cc": CcRules()}
