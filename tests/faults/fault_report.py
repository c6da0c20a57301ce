"""One JSON line per fault test, appended to the file named by RATING_FAULT_REPORT (if set).

`bench/reliability_report.py` sets the variable, runs the fault tests and prints the lines
as a table. Kept free of test imports so that any test module can use it.
"""

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

REPORT_ENV = "RATING_FAULT_REPORT"


@dataclass(frozen=True)
class FaultReport:
    fault: str
    games_offered: int  # distinct valid games produced
    messages: int  # input records produced (repeats and bad ones included)
    applied: int  # offered games with an idempotency record (each is processed once)
    copies: int  # byte-identical re-publications in the output topic (audit.copies)
    lost: int  # offered games without a record, or events missing from the topic: must be 0
    double_applied: int  # games applied more than once (an event id with different bytes): must be 0
    recovery_s: float | None  # fault end -> everything produced by then committed (None: never)
    first_progress_s: float | None = None  # fault end -> the group's first commit progress
    dead_letters: int = 0
    # Copies that came after a newer event of their key: a test that allows them (a send delayed
    # beyond the publication lease by a frozen broker) counts them here; a strict one fails on any.
    late_copies: int = 0


def report_fault(report: FaultReport) -> None:
    """Append the line when RATING_FAULT_REPORT names a file; do nothing otherwise."""
    target = os.environ.get(REPORT_ENV)
    if not target:
        return
    line = {"test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0], **asdict(report)}
    with Path(target).open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
