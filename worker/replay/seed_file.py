"""Reading a seeding file from disk (the rows themselves are validated by `worker.engine.seed_rows`)."""

import csv
from pathlib import Path

from worker.engine.engine import SeedRow
from worker.engine.seed_rows import SeedFileError, parse_seed_rows


def read_seed_file(path: Path) -> list[SeedRow]:
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            return parse_seed_rows(path, f)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise SeedFileError(f"{path}: cannot read the seeding file: {e}") from None
