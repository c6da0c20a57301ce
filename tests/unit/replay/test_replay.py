"""The offline replay in process: its chunks and its setting of the garbage collector."""

import gc
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.engine.engine import Engine
from worker.replay import replay as replay_module
from worker.replay.replay import replay
from worker.replay.seed_file import read_seed_file
from worker.rules.hundredths import Points
from worker.systems.registry import ARENA

SAMPLES = Path(__file__).resolve().parents[3] / "samples"


async def rate_sample(games: bytes | None = None) -> tuple[bytes, str]:
    out, dlq = io.BytesIO(), io.StringIO()
    source = io.BytesIO((SAMPLES / "games.jsonl").read_bytes() if games is None else games)
    engine = Engine(ARENA, Points(1200))
    await replay(engine, read_seed_file(SAMPLES / "seed.csv", ARENA.rules), source, out, dlq, 1_000_000)
    return out.getvalue(), dlq.getvalue()


@pytest.mark.parametrize("lines", [1, 7, 500])
async def test_the_output_does_not_depend_on_the_chunk_size(lines: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks cut the seeding rows and the games anywhere (a game's copies, a player's games in two
    chunks): the bytes are those of the default chunk size."""
    expected = await rate_sample()
    assert len(expected[0].splitlines()) > 3 * replay_module.CHUNK_LINES  # the sample spans chunks
    monkeypatch.setattr(replay_module, "CHUNK_LINES", lines)
    assert await rate_sample() == expected


@pytest.fixture
def threshold() -> Iterator[tuple[int, int, int]]:
    """A threshold of the test's own, so that whatever ran before cannot make a restore look done."""
    saved = gc.get_threshold()
    gc.set_threshold(1234, 11, 12)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


async def test_the_collector_threshold_is_raised_while_it_runs_and_restored_after_even_on_error(
    threshold: tuple[int, int, int],
) -> None:
    before = threshold
    seen: list[tuple[int, int, int]] = []

    class Spy(io.BytesIO):
        def write(self, data: bytes) -> int:  # type: ignore[override]
            seen.append(gc.get_threshold())
            return super().write(data)

    engine = Engine(ARENA, Points(1200))
    await replay(
        engine, read_seed_file(SAMPLES / "seed.csv", ARENA.rules), io.BytesIO(b""), Spy(), io.StringIO(), 1_000_000
    )
    assert seen and all(t[0] == replay_module.COLLECT_AFTER for t in seen)
    assert gc.get_threshold() == before

    class Broken(io.BytesIO):
        def write(self, data: bytes) -> int:  # type: ignore[override]
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        await replay(
            engine,
            read_seed_file(SAMPLES / "seed.csv", ARENA.rules),
            io.BytesIO(b""),
            Broken(),
            io.StringIO(),
            1_000_000,
        )
    assert gc.get_threshold() == before
