"""`rating-worker run`'s hot path: a batch from fetch to commit."""
