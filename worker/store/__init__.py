"""Rating states, idempotency records and outboxes in Redis, by atomic check-and-set."""
