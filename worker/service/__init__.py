"""The process: how `run` and the one-shot commands are wired, started and stopped."""
