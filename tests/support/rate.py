"""`rating-worker rate` run as a user runs it: a process of its own, from the repository, in the
environment the tests run in without its RATING_* variables (a setting of the machine's must not
change what a test sees), with RATING_SYSTEM and the settings the test gives."""

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.support import commands

REPO = Path(__file__).resolve().parents[2]


def rate_command(
    args: Iterable[str | Path], system: str | None = None, settings: Mapping[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """`rating-worker rate ARGS` and its environment: RATING_SYSTEM=`system` (unset for None: the
    default system), `settings`, no other RATING_* variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")}
    if system is not None:
        env["RATING_SYSTEM"] = system
    env.update(settings or {})
    return [sys.executable, "-m", "worker", "rate", *map(str, args)], env


def rate(
    *args: str | Path,
    system: str | None = None,
    settings: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[bytes]:
    """`rate_command`'s process, given `stdin` (for the games file `-`; None: none), run to its end
    (within `timeout` seconds): its status, stdout and stderr."""
    argv, env = rate_command(args, system, settings)
    return commands.run(argv, input=stdin, capture_output=True, cwd=REPO, env=env, timeout=timeout, check=False)
