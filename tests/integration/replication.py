"""A Redis replica of a test's primary, for the tests of WAIT, failover and Sentinel."""

import time
from pathlib import Path

import redis

from worker.embedded.stack import RedisServer

LINK_SECONDS = 10.0


def start_replica(primary: RedisServer, directory: Path) -> RedisServer:
    """A redis-server replicating `primary`, returned once its link is up and in sync."""
    directory.mkdir(parents=True, exist_ok=True)
    replica = RedisServer(directory=directory).start()
    client = redis.Redis(port=replica.port)
    client.replicaof("127.0.0.1", primary.port)
    deadline = time.monotonic() + LINK_SECONDS
    while client.info("replication").get("master_link_status") != "up":
        if time.monotonic() > deadline:
            replica.kill()
            raise RuntimeError(f"replica on {replica.port} did not sync with {primary.port}")
        time.sleep(0.05)
    client.close()
    return replica


def promote(replica: RedisServer) -> None:
    """Detach the replica from its primary: it keeps its data and takes writes (a failover)."""
    client = redis.Redis(port=replica.port)
    client.replicaof("NO", "ONE")
    client.close()
