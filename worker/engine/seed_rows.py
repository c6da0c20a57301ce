"""Seeding files: a header line, then one row a rating, validated whole before anything is applied.

A bad row, or the same (player_id, category) twice, refuses the whole file (docs/contract.md,
"Seeding established ratings"; docs/systems/, "Seeding rows"): the caller gets SeedFileError and must
write nothing. Each system has its own header and row syntax (`RatingSystem.parse_seed_row`).
Reading the file itself is `worker.replay.seed_file`'s: this module parses text.
"""

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from worker.rules.interface import RatingSystem, SeedRow


class SeedFileError(Exception):
    """The seeding file is refused whole; the message names the file, the line and the reason."""


def parse_seed_rows(path: Path | str, lines: Iterable[str], rules: RatingSystem[Any]) -> list[SeedRow]:
    """The rows of the lines of a seeding file of `rules`' system (the caller reads it: an open
    file is its lines; `path` names it in errors); SeedFileError refuses it whole."""
    reader = csv.reader(lines, strict=True)
    header = next(reader, None)
    expected = list(rules.seed_header)
    if header != expected:
        raise SeedFileError(f"{path}:1: the header must be {','.join(expected)}, got {','.join(header or [])!r}")
    rows: list[SeedRow] = []
    seen: dict[str, int] = {}
    for fields in reader:
        line = reader.line_num
        if not fields or fields == [""]:
            continue  # a blank line
        try:
            row = rules.parse_seed_row(fields)
        except ValueError as e:
            raise SeedFileError(f"{path}:{line}: {e}") from None
        if row.key in seen:
            raise SeedFileError(f"{path}:{line}: {row.key} is seeded twice (first on line {seen[row.key]})")
        seen[row.key] = line
        rows.append(row)
    return rows
