"""The fault-injection tests: faults under load (test_faults.py), SIGKILLs (test_sigkill.py),
failovers (test_failover.py), rewound groups (test_watermarks.py), stops with the dependencies
away (test_stopping.py). `bench/reliability_report.py` runs them (`pytest -m faults`) and
tabulates the lines they write to $RATING_FAULT_REPORT (fault_report.py).

They run long: each has 15 minutes unless it states a shorter limit of its own (the deadline
it always had), instead of the suite's 5.
"""

from pathlib import Path

import pytest

FAULT_TEST_SECONDS = 900
HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(FAULT_TEST_SECONDS))
