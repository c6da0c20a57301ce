"""A Redis replica of a test's primary, for the tests of WAIT, failover and Sentinel."""

import time
from pathlib import Path

import redis

from tests.support.processes import Processes
from worker.embedded.stack import RedisServer

LINK_SECONDS = 10.0


def start_replica(processes: Processes, primary: RedisServer, directory: Path) -> RedisServer:
    """A redis-server replicating `primary` (owned by `processes`), returned once its link is up and in sync."""
    replica = processes.redis(directory)
    # A primary waits repl-diskless-sync-delay (5 s by default) for more replicas before it
    # streams its data set to the first: nothing else joins here, so it starts at once.
    with redis.Redis(port=primary.port) as client:
        client.config_set("repl-diskless-sync-delay", 0)
    with redis.Redis(port=replica.port) as client:
        client.replicaof("127.0.0.1", primary.port)
        deadline = time.monotonic() + LINK_SECONDS
        while client.info("replication").get("master_link_status") != "up":
            if time.monotonic() > deadline:
                raise RuntimeError(f"replica on {replica.port} did not sync with {primary.port}")
            time.sleep(0.05)
    return replica


def promote(replica: RedisServer) -> None:
    """Detach the replica from its primary: it keeps its data and takes writes (a failover)."""
    with redis.Redis(port=replica.port) as client:
        client.replicaof("NO", "ONE")
