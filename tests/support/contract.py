"""Values of the event contract (docs/contract.md), spelled out here as the contract
lists them, independently of the schemas under test."""

from typing import Any

RESULTS = ("1-0", "0-1", "1/2-1/2")
TERMINATIONS = (
    "checkmate",
    "resignation",
    "timeout",
    "disconnection",
    "stalemate",
    "draw_agreement",
    "repetition",
    "insufficient_material",
    "fifty_moves",
    "forfeit",
    "aborted",
)

# A valid `arena.game.finished.v1` message (blitz, 3+0), to vary field by field.
VALID_GAME: dict[str, Any] = {
    "event_id": "ev-1",
    "game_id": "g1",
    "finished_at": "2026-11-29T21:44:51Z",
    "rated": True,
    "time_control": {"base_seconds": 180, "increment_seconds": 0},
    "white_id": "alice",
    "black_id": "bob",
    "result": "1-0",
    "termination": "checkmate",
}
