"""A test that leaves a process running (started outside any fixture's ownership): tests/harness/
test_processes.py runs it in a pytest of its own and checks that the session's check fails loudly,
naming it, and kills it. Its pid is written to $PROBE_PIDS.
"""

import os
from pathlib import Path

from tests.support.processes import Processes


def test_a_test_that_leaks_a_redis_server(tmp_path: Path) -> None:
    leaked = Processes("a probe that never kills it").redis(tmp_path)
    assert leaked.process is not None
    Path(os.environ["PROBE_PIDS"]).write_text(str(leaked.process.pid))
