"""Reading a seeding file from disk (the rows themselves are validated by `worker.engine.seed_rows`)."""

import csv
from pathlib import Path
from typing import Any

from worker.engine.seed_rows import SeedFileError, parse_seed_rows
from worker.rules.interface import RatingSystem, SeedRow


def read_seed_file(path: Path, rules: RatingSystem[Any]) -> list[SeedRow]:
    """The rows of the seeding file of `rules`' system."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            return parse_seed_rows(path, f, rules)
    except OSError as e:  # as a games file that cannot be read: the reason, without Python's errno
        raise SeedFileError(f"{path}: cannot read the seeding file: {e.strerror or e}") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise SeedFileError(f"{path}: cannot read the seeding file: {e}") from None
