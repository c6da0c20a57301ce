"""`rating-worker close-period` on a test's stack, for the tests of its runs' record and log lines
and of the workers' metrics of them: the command (with `fide`'s settings), a game of a month, the
month due by the clock, and the command's JSON log lines."""

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support import commands
from tests.support.stack import Stack
from worker.rules.finished_at import month_named, month_number

FIDE = {"system": "fide"}
PREFIX = "rating-fide:"  # fide's default RATING_REDIS_KEY_PREFIX
LOGGER = "worker.operate.close_period"


def close_period(stack: Stack, *args: str, **settings: object) -> "subprocess.CompletedProcess[bytes]":
    return commands.run(
        [sys.executable, "-m", "worker", "close-period", *args],
        env=stack.env(**FIDE, **settings),
        capture_output=True,
        timeout=120,
        check=False,
    )


def due_month() -> str:
    """The month `close-period --due` closes now: the month before the one an hour ago falls in
    (RATING_PERIOD_GRACE_SECONDS's default)."""
    first = (datetime.now(UTC) - timedelta(hours=1)).replace(day=1)
    return (first - timedelta(days=1)).strftime("%Y-%m")


def month_before(month: str) -> str:
    return month_named(month_number(month) - 1)


def game(game_id: str, white: str, black: str, month: str) -> bytes:
    """A rated blitz game won by white, finished in the middle of `month`."""
    value = {
        "event_id": f"e-{game_id}",
        "game_id": game_id,
        "white_id": white,
        "black_id": black,
        "result": "1-0",
        "termination": "checkmate",
        "rated": True,
        "time_control": {"base_seconds": 180, "increment_seconds": 0},
        "finished_at": f"{month}-15T12:00:00Z",
    }
    return json.dumps(value, separators=(",", ":")).encode()


def steps(done: "subprocess.CompletedProcess[bytes]") -> list[dict[str, Any]]:
    """close-period's own JSON log lines on stderr, in order (its plain lines and the clients' left out)."""
    lines = []
    for line in done.stderr.decode(errors="replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("logger") == LOGGER:
            lines.append(value)
    return lines
