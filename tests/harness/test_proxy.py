"""The fault proxy's stop leaves no socket to the garbage collector, even for connections that
arrive as it stops (a worker retrying its connections does that): an accepted socket the
collector finds is a ResourceWarning, an error in whichever later test the collector runs
(CI saw it at the teardown of an alert test that followed one with a proxy)."""

import gc
import socket
import sys

from tests.faults.proxy import Proxy


def test_connections_arriving_as_the_proxy_stops_are_closed_by_it() -> None:
    upstream = socket.create_server(("127.0.0.1", 0), backlog=64)
    leaked: list[str] = []  # what the collector (run by us or on its own) had to close
    hook, sys.unraisablehook = sys.unraisablehook, lambda u: leaked.append(f"{u.exc_value}")
    try:
        for _ in range(20):
            proxy = Proxy(upstream_port=upstream.getsockname()[1])
            port = proxy.start()
            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
            proxy.stop()  # right after the connections: accepted in the loop's last iterations
            assert proxy.thread is not None and not proxy.thread.is_alive(), "the proxy did not stop"
            for client in clients:
                client.close()
            gc.collect()
            assert not leaked, leaked
    finally:
        sys.unraisablehook = hook
        upstream.close()
