"""Export the JSON Schema of every message of the contract to `schemas/json/`.

`rating-worker schemas` writes the files; `rating-worker schemas --check` (and a test) fails
when they differ from the models.
"""

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from schemas.close_line import FideCloseLine, TorneloCloseLine
from schemas.correspondence_game import CorrespondenceGameFinished
from schemas.game_finished import GameFinished
from schemas.rating_changed import RatingChanged
from schemas.rating_changed_v2 import RatingChangedV2
from schemas.seed_record import SeedRecord
from schemas.seed_record_cc import CcSeedRecord
from schemas.seed_record_fide import FideSeedRecord
from schemas.seed_record_glicko2 import Glicko2SeedRecord
from schemas.seed_record_tornelo import TorneloSeedRecord
from schemas.tornelo_game import TorneloGameFinished
from schemas.tournament_finished import TournamentFinished

SCHEMA_DIR = Path(__file__).parent / "json"
# Each file's model: a pydantic model, or an annotated union of them (v2's events).
MODELS: dict[str, Any] = {
    "arena.game.finished.v1.schema.json": GameFinished,
    "arena.rating.changed.v1.schema.json": RatingChanged,
    "seed-record.schema.json": SeedRecord,
    # Contract v2 (the other rating systems); version 1's files above are unchanged.
    "arena.rating.changed.v2.schema.json": RatingChangedV2,
    "arena.game.finished.v1.correspondence.schema.json": CorrespondenceGameFinished,
    "seed-record.uscf-cc.schema.json": CcSeedRecord,
    "seed-record.glicko2.schema.json": Glicko2SeedRecord,
    "arena.game.finished.v1.tornelo.schema.json": TorneloGameFinished,
    "arena.tournament.finished.v1.schema.json": TournamentFinished,
    "close-line.fide.schema.json": FideCloseLine,
    "close-line.tornelo.schema.json": TorneloCloseLine,
    "seed-record.fide.schema.json": FideSeedRecord,
    "seed-record.tornelo.schema.json": TorneloSeedRecord,
}


def render(model: Any) -> str:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **TypeAdapter(model).json_schema()}
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def export(directory: Path = SCHEMA_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in MODELS.items():
        path = directory / name
        path.write_text(render(model), encoding="utf-8")
        written.append(path)
    return written


def check(directory: Path = SCHEMA_DIR) -> list[Path]:
    """The files that are missing or differ from what `export` would write."""
    stale = []
    for name, model in MODELS.items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != render(model):
            stale.append(path)
    return stale
