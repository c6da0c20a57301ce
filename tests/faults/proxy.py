"""A TCP proxy in front of Redis or the broker, to slow, cut or silence a worker's connections.

The proxy runs its own event loop in a thread of its own, so that a test blocked in a
subprocess call cannot stall the traffic (the one loop a test may drive itself).
"""

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def kafka_client_id(first: bytes) -> str:
    """The client id in the header of a Kafka request (size, api key, version, correlation id, id)."""
    if len(first) < 14:
        return ""
    size = int.from_bytes(first[12:14], "big", signed=True)
    return first[14 : 14 + max(size, 0)].decode(errors="replace")


@dataclass
class Proxy:
    """A TCP proxy on 127.0.0.1 in front of `upstream_port`, to cut and slow a worker's connections.

    A connection is *targeted* when `target` accepts the first bytes its client sent (all are, by
    default; for the broker, those of the worker's Kafka client id). Only targeted connections
    feel the faults and are counted:
    - `delay`: each chunk waits that long before it is forwarded, both ways (added latency,
      and a bandwidth cap);
    - `cut()`: every targeted connection is reset, and new ones are reset as they open, until
      `heal()`.
    """

    upstream_port: int = 0
    target: Callable[[bytes], bool] = lambda first: True
    port: int = 0
    delay: float = 0.0
    cutting: bool = False
    connections: int = 0  # targeted connections opened
    bytes_up: int = 0  # targeted bytes, client -> server
    bytes_down: int = 0  # targeted bytes, server -> client
    open: set[asyncio.StreamWriter] = field(default_factory=set)  # both ends of every connection
    targeted: set[asyncio.StreamWriter] = field(default_factory=set)  # both ends of targeted ones
    clients: dict[asyncio.StreamWriter, asyncio.StreamWriter] = field(default_factory=dict)  # server end -> client's
    loop: asyncio.AbstractEventLoop | None = None
    thread: threading.Thread | None = None

    def start(self) -> int:
        """Listen (on `port`, or a free one) in a thread of its own, so that a test blocked in a
        subprocess call cannot stall the traffic; returns the port."""
        ready = threading.Event()

        def serve() -> None:
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)  # this thread's loop, for the shutdown's gather()
            server = self.loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", self.port))
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()
            self.loop.run_until_complete(self._close(server))
            self.loop.close()

        self.thread = threading.Thread(target=serve, name="fault-proxy", daemon=True)
        self.thread.start()
        assert ready.wait(5), "the proxy did not start"
        return self.port

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cut(self) -> None:
        self.cutting = True
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self._reset_all, True)

    def heal(self) -> None:
        self.cutting = False

    def stop(self) -> None:
        if self.loop is not None and self.thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)

    async def _close(self, server: asyncio.Server) -> None:
        """Every connection closed before the loop is: none is left to the garbage collector (a
        ResourceWarning, an error under the suite's filterwarnings, in whichever later test the
        collector runs). A connection accepted in the loop's last iterations has an accepting task
        not started yet, which a cancel would end before it owns the socket: each gets its first
        steps before anything is cancelled. An aborted transport closes its socket in a callback
        of a later iteration, so a few more run before the loop closes."""
        server.close()
        for _ in range(5):
            await asyncio.sleep(0)
        while pending := asyncio.all_tasks() - {asyncio.current_task()}:
            self._reset_all(False)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for _ in range(3):
                await asyncio.sleep(0)

    def _reset_all(self, targeted_only: bool) -> None:
        for writer in list(self.open):
            if not targeted_only or writer in self.targeted:
                writer.transport.abort()

    def forward(self, data: bytes, up: bool) -> bool:
        """Whether to pass on this chunk of a targeted connection (all, here)."""
        return True

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.CancelledError):  # the proxy's stop: its loop ends next
            await self._proxied(client_r, client_w)

    async def _proxied(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        ends = [client_w]  # both ends are aborted however this ends, the proxy's stop included
        try:
            first = await client_r.read(65536)
            targeted = bool(first) and self.target(first)
            if not first or (targeted and self.cutting):
                return
            try:
                server_r, server_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
            except OSError:
                return
            ends.append(server_w)
            self.open.update(ends)
            self.clients[server_w] = client_w
            if targeted:
                self.connections += 1
                self.targeted.update(ends)
            pumps = [
                asyncio.create_task(self._pump(client_r, server_w, up=True, targeted=targeted, first=first)),
                asyncio.create_task(self._pump(server_r, client_w, up=False, targeted=targeted)),
            ]
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
        finally:
            self.clients.pop(ends[-1], None)
            for writer in ends:
                self.open.discard(writer)
                self.targeted.discard(writer)
                writer.transport.abort()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up: bool, targeted: bool, first: bytes = b""
    ) -> None:
        data = first or await reader.read(65536)
        while data:
            if targeted:
                if self.delay:
                    await asyncio.sleep(self.delay)
                if self.cutting:
                    return
                if up:
                    self.bytes_up += len(data)
                else:
                    self.bytes_down += len(data)
            if not targeted:
                writer.write(data)
                await writer.drain()
            else:
                await self.pass_on(data, up, writer)
            data = await reader.read(65536)

    async def pass_on(self, data: bytes, up: bool, writer: asyncio.StreamWriter) -> None:
        """Forward a chunk of a targeted connection (if `forward` lets it)."""
        if self.forward(data, up):
            writer.write(data)
            await writer.drain()


@dataclass
class ReplyDropper(Proxy):
    """A proxy in front of redis-server for one worker, to cut its replies off.

    Once armed, the first request carrying `trigger` (and at least `min_request` bytes) starts
    the cut: that request and every later one still reach Redis and run, but no reply comes
    back, on any connection, until `heal()`. An asymmetric partition, or a reply lost to a
    timeout: the client cannot know whether its command ran.
    """

    trigger: bytes = b""
    min_request: int = 0
    armed: bool = False
    dropping: bool = False
    cut_at: float | None = None

    def heal(self) -> None:
        self.dropping = False

    def forward(self, data: bytes, up: bool) -> bool:
        if up and self.armed and self.trigger in data and len(data) >= self.min_request:
            self.dropping, self.armed, self.cut_at = True, False, time.monotonic()
        return up or not self.dropping


def produce_request_to(data: bytes, topic: str) -> bool:
    """Whether a chunk a client sent starts a Produce request (api key 0) naming `topic`."""
    return len(data) >= 6 and data[4:6] == b"\x00\x00" and topic.encode() in data


@dataclass
class RequestHolder(Proxy):
    """A proxy in front of the broker that delays or swallows produce requests of one topic.

    - `hold(n, seconds)`: the next `n` produce requests of `topic` are held `seconds` each, then
      forwarded on their original connection, even after the client gave up on them and closed it
      (the connection to the broker stays open until they are through): requests that reach the
      broker late. With `cut_client`, the client's side of the connection is reset at once, so
      that the client sees a broken connection (and resends by itself) while the held request
      still goes through later.
    - `dropping`: every produce request of `topic` is swallowed (never forwarded) until cleared.
    Only targeted connections (see `Proxy.target`) are concerned.
    """

    topic: str = ""
    holds: int = 0
    hold_seconds: float = 0.0
    cut_client: bool = False
    dropping: bool = False
    held_at: list[float] = field(default_factory=list)  # when each held request was caught
    released_at: list[float] = field(default_factory=list)  # and forwarded
    dropped: int = 0

    def hold(self, n: int, seconds: float, *, cut_client: bool = False) -> None:
        self.holds, self.hold_seconds, self.cut_client = n, seconds, cut_client

    async def pass_on(self, data: bytes, up: bool, writer: asyncio.StreamWriter) -> None:
        if up and produce_request_to(data, self.topic):
            if self.dropping:
                self.dropped += 1
                return
            if self.holds > 0:
                self.holds -= 1
                self.held_at.append(time.monotonic())
                if self.cut_client and writer in self.clients:
                    self.clients[writer].transport.abort()
                await asyncio.sleep(self.hold_seconds)
                writer.write(data)
                await writer.drain()
                self.released_at.append(time.monotonic())
                await asyncio.sleep(1.0)  # the broker reads it before this connection goes
                return
        await super().pass_on(data, up, writer)
