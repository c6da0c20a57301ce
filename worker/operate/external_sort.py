"""Sorting more than memory holds: sorted runs spilled to files under a budget, then merged.

Entries are tuples of MessagePack's types (str, int, bool, bytes), sorted as tuples. Entries
are held in memory until their sizes (as the caller counts them) pass the budget; the run is
then sorted and written to a file of `directory`. `merged()` yields every entry in order, from
the files and the last run still in memory, holding one entry per file at a time. Entries
that compare equal keep no particular order: give each a unique prefix (an arrival number).
A budget under `MIN_BUDGET_BYTES` is refused (ValueError).
"""

import heapq
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgpack

Entry = tuple[Any, ...]
# Python's own cost of a held entry beyond the sizes the caller counts (the tuple and its items).
ENTRY_OVERHEAD = 120
# The least budget a sort takes. `merged()` opens every run at once (a file and its read buffer
# each), and a run holds at most the budget, so the runs number about the data's size over the
# budget. At 8 MiB a run holds some 20,000 of rebuild's entries (about 400 bytes counted each):
# the history of 10 million games the docs size for is under 500 runs, within the 1,024 files a
# process may open by default. Less would pass that limit on such a history, with more read
# buffers than the budget saves (a budget of 0 made one run per entry).
MIN_BUDGET_BYTES = 8 * 1024 * 1024


class ExternalSort:
    def __init__(self, directory: Path, budget_bytes: int) -> None:
        if budget_bytes < MIN_BUDGET_BYTES:
            raise ValueError(
                f"a sort's budget of {budget_bytes} bytes is under its floor of {MIN_BUDGET_BYTES} bytes "
                "(its runs are merged all at once: give it more memory)"
            )
        self.directory = directory
        self.budget_bytes = budget_bytes
        self.runs: list[Path] = []
        self.spilled_runs = 0  # every run written (`runs` holds those not merged yet)
        self.spilled_bytes = 0  # their size
        self._held: list[Entry] = []
        self._held_bytes = 0

    def add(self, entry: Entry, size: int) -> None:
        """Add an entry of about `size` bytes (its strings and bytes)."""
        self._held.append(entry)
        self._held_bytes += size + ENTRY_OVERHEAD
        if self._held_bytes >= self.budget_bytes:
            self._spill()

    def _spill(self) -> None:
        self._held.sort()
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"run-{len(self.runs):05d}"
        packer = msgpack.Packer(use_bin_type=True)
        with path.open("wb") as out:
            for entry in self._held:
                out.write(packer.pack(entry))
            self.spilled_bytes += out.tell()
        self.runs.append(path)
        self.spilled_runs += 1
        self._held, self._held_bytes = [], 0

    def merged(self) -> Iterator[Entry]:
        """Every entry added, in order (once: the runs' files are deleted as they end)."""
        self._held.sort()
        held, self._held, self._held_bytes = self._held, [], 0
        files = [path.open("rb") for path in self.runs]
        try:
            yield from heapq.merge(*(_read(f) for f in files), held)
        finally:
            for f in files:
                f.close()
            for path in self.runs:
                path.unlink(missing_ok=True)
            self.runs = []


def _read(f: BinaryIO) -> Iterator[Entry]:
    yield from msgpack.Unpacker(f, use_list=False, raw=False, max_buffer_size=0)
