"""Seeding rows: `player_id,category,rating,rated_games`, validated whole before anything is applied.

A bad row, or the same (player_id, category) twice, refuses the whole file (contract,
"Seeding established ratings"): the caller gets SeedFileError and must write nothing.
Reading the file itself is `worker.replay.seed_file`'s: this module parses text.
"""

import csv
from decimal import Decimal
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from schemas.seed_record import SeedRecord
from worker.engine.engine import SeedRow
from worker.rules.categories import Category
from worker.rules.hundredths import parse_fixed2

HEADER = ["player_id", "category", "rating", "rated_games"]


class SeedFileError(Exception):
    """The seeding file is refused whole; the message names the file, the line and the reason."""


def parse_seed_rows(path: Path | str, f: TextIO) -> list[SeedRow]:
    """The rows of an open seeding file (`path` names it in errors); SeedFileError refuses it whole."""
    reader = csv.reader(f, strict=True)
    header = next(reader, None)
    if header != HEADER:
        raise SeedFileError(f"{path}:1: the header must be {','.join(HEADER)}, got {','.join(header or [])!r}")
    rows: list[SeedRow] = []
    seen: dict[str, int] = {}
    for fields in reader:
        line = reader.line_num
        if not fields or fields == [""]:
            continue  # a blank line
        row = _row(fields, f"{path}:{line}")
        if row.key in seen:
            raise SeedFileError(f"{path}:{line}: {row.key} is seeded twice (first on line {seen[row.key]})")
        seen[row.key] = line
        rows.append(row)
    return rows


def _row(fields: list[str], where: str) -> SeedRow:
    if len(fields) != len(HEADER):
        raise SeedFileError(f"{where}: expected {len(HEADER)} fields, got {len(fields)}")
    player_id, category, rating, rated_games = fields
    try:
        hundredths = parse_fixed2(rating)
    except ValueError as e:
        raise SeedFileError(f"{where}: rating: {e}") from None
    if not (rated_games.isascii() and rated_games.isdigit()):
        raise SeedFileError(f"{where}: rated_games: {rated_games!r} is not an integer >= 0")
    try:
        record = SeedRecord(
            player_id=player_id,
            category=category,  # type: ignore[arg-type]  # validated by the model
            rating=Decimal(hundredths) / 100,
            rated_games=int(rated_games),
        )
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        field = ".".join(str(p) for p in first["loc"])
        raise SeedFileError(f"{where}: {field}: {first['msg']}") from None
    return SeedRow(record.player_id, Category(record.category), hundredths, record.rated_games)
