"""A one-line progress bar on a terminal (stderr), redrawn at most every 0.2 s."""

import time
from typing import TextIO

REDRAW_SECONDS = 0.2  # often enough to look alive, rare enough to cost nothing
WIDTH = 30


class Progress:
    def __init__(self, stream: TextIO, total_bytes: int | None) -> None:
        self.stream = stream
        self.total = total_bytes
        self.started = self.last = time.monotonic()

    def update(self, done_bytes: int | None, games: int) -> None:
        now = time.monotonic()
        if now - self.last < REDRAW_SECONDS:
            return
        self.last = now
        rate = games / max(now - self.started, 1e-9)
        if self.total and done_bytes is not None:
            frac = min(done_bytes / self.total, 1.0)
            bar = "#" * int(WIDTH * frac)
            self.stream.write(f"\r[{bar:<{WIDTH}}] {frac:6.1%}  {games:,} games  {rate:,.0f}/s")
        else:
            self.stream.write(f"\r{games:,} games  {rate:,.0f}/s")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\r\033[K")
        self.stream.flush()
