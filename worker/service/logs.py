"""Logging: JSON lines (one event per line) for machines, plain lines on a terminal."""

import json
import logging
import sys
import time

# Fields a log call may add with `extra=`; they become keys of the JSON line. `step` and the rest
# are close-period's (`worker.operate.close_period`): each step of a close, and what it counts.
EXTRA_FIELDS = (
    "game_id",
    "partition",
    "offset",
    "error_kind",
    "step",
    "period",
    "ratings",
    "partitions",
    "behind",
    "seconds",
    "outcome",
)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in EXTRA_FIELDS:
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


class KafkaClientErrorsAsWarnings(logging.Filter):
    """aiokafka logs each failed connection at ERROR ("Unable connect to ..."), many a second
    while a broker is away. The worker's own retry line, which names the dependency and the
    setting that points at it, is the error: the client's own lines become warnings."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("aiokafka") and record.levelno == logging.ERROR:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return record.levelno >= self.level


def configure_logging(level: str) -> None:
    threshold = logging.getLevelName(level.upper())
    handler = logging.StreamHandler(sys.stderr)
    if sys.stderr.isatty():
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    else:
        handler.setFormatter(JsonFormatter())
    handler.addFilter(KafkaClientErrorsAsWarnings(threshold))
    logging.basicConfig(level=threshold, handlers=[handler], force=True)
    logging.getLogger("aiokafka").setLevel(max(logging.WARNING, threshold))
