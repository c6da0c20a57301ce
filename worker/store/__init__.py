"""Rating states, idempotency records and outboxes: what a store does (`protocol.py`), in Redis by
atomic check-and-set (`redis_store.py`), and the schedule of a batch's engine calls over a store's
snapshot (`schedule.py`; here and not in `worker.engine`, which does no I/O: it drives a store)."""
