"""Values of the event contract (../shared/spec/events.md), spelled out here as the contract
lists them, independently of the schemas under test."""

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
