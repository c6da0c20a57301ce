"""`rating-worker rate`: the engine over a file, with state in memory."""
