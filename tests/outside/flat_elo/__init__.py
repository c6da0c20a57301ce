"""A toy sixth rating system, defined entirely in the tests: Elo with a flat K of 20 on FIDE's
table of expected scores, every player starting at 1500.00. It follows docs/adding-a-system.md
step by step, and tests/cli/test_outside_system.py runs it through the contract suite, `rate` and
one `run` against a real broker and Redis, with no change to any file outside the tests."""
