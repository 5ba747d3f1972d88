"""A lean HTTP/1.1 client for the submitter's one job: POST pre-built requests, keep their status.

aiohttp spends most of its per-request CPU on things the submitter never uses (request and header
objects, cookie jars, response objects, one task per request, timers). Here a request is a single
pre-built ``bytes`` (request line, headers and body), written to an idle keep-alive connection from
a bounded pool; responses go through httptools' C parser and are never decoded: on the end of each
response a callback gets the request's key and status. No task or timer per request.

One request at a time per connection (no pipelining: a slow answer must not delay the ones behind
it on the same connection). A request that finds no idle connection waits in a FIFO queue and opens
a new connection if the pool is below its limit; waiting time counts as latency, as it would for
any client, and the moment a request is actually written to a connection is reported apart
(``on_send``), so the harness side (waiting for a connection) and the server side (time on the wire)
can be told apart. A connection that cannot be opened, or is lost while a request is in flight, fails that
request with :data:`CONNECTION_ERROR`; nothing is retried.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

import httptools

CONNECTION_ERROR = -1

Done = Callable[[int, int], None]
"""Called with (key, HTTP status or CONNECTION_ERROR) once per request."""
Sent = Callable[[int], None]
"""Called with the key when a request is written to a connection (at most once per request)."""


def request_prefix(server: str, path: str, headers: Mapping[str, str]) -> bytes:
    """Request line and headers up to (not including) Content-Length, for POSTs to ``server + path``."""
    u = urlsplit(server)
    lines = [f"POST {u.path.rstrip('/')}{path} HTTP/1.1", f"Host: {u.netloc}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def build_request(prefix: bytes, body: bytes) -> bytes:
    return b"%sContent-Length: %d\r\n\r\n%s" % (prefix, len(body), body)


class _Connection(asyncio.Protocol):
    __slots__ = ("key", "parser", "pool", "transport")

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.key = -1
        """The in-flight request's key, -1 when idle."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, key: int, data: bytes) -> None:
        self.key = key
        self.pool.on_send(key)
        self.transport.write(data)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()  # type: ignore[union-attr]  # connection_lost fails the request

    def on_message_complete(self) -> None:  # httptools callback
        key, self.key = self.key, -1
        if key < 0:  # an answer nobody asked for (a server's 408 on an idle connection): drop the connection
            self.transport.close()  # type: ignore[union-attr]
            return
        reusable = self.parser.should_keep_alive()
        if not reusable:
            self.transport.close()  # type: ignore[union-attr]
        self.pool.answered(self, key, self.parser.get_status_code(), reusable)

    def connection_lost(self, exc: Exception | None) -> None:
        key, self.key = self.key, -1
        self.pool.lost(self, key)


class Pool:
    """Up to ``limit`` keep-alive connections to one server; :meth:`post` never blocks."""

    def __init__(self, server: str, ssl_context: ssl.SSLContext | None, limit: int, done: Done,
                 connect_timeout: float = 10.0, on_send: Sent | None = None) -> None:
        u = urlsplit(server)
        self._host = u.hostname or "localhost"
        self._port = u.port or (443 if u.scheme == "https" else 80)
        self._ssl = ssl_context if u.scheme == "https" else None
        self._limit = limit
        self._done = done
        self._connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        self._opening = 0
        self._waiting: deque[tuple[int, bytes]] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self.on_send: Sent = on_send or (lambda key: None)
        self.peak = 0
        """Most connections open at once."""
        self.waited_at_cap = 0
        """Requests that found every connection busy with the pool at its limit."""

    @property
    def limit(self) -> int:
        return self._limit

    def post(self, key: int, data: bytes) -> None:
        if self._idle:
            self._idle.pop().send(key, data)
            return
        self._waiting.append((key, data))
        if len(self._all) + self._opening >= self._limit:
            self.waited_at_cap += 1
        self._grow()

    def _grow(self) -> None:
        if len(self._all) + self._opening < self._limit:
            self._opening += 1
            t = asyncio.get_running_loop().create_task(self._open())
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

    async def warm(self, n: int) -> int:
        """Open up to ``n`` idle connections now (TLS set up before the clock starts); how many opened.
        A failure here is not an error: requests will try again, and fail visibly."""
        n = max(0, min(n, self._limit - len(self._all) - self._opening))
        self._opening += n
        await asyncio.gather(*(self._open() for _ in range(n)))
        return len(self._idle)

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(self), self._host, self._port, ssl=self._ssl,
                                       server_hostname=self._host if self._ssl else None),
                self._connect_timeout)
        except (OSError, ssl.SSLError, TimeoutError):
            self._opening -= 1
            if self._waiting:
                # the request that asked for this connection fails, as it would alone; the next
                # one in line gets its own attempt (each failed attempt consumes one request)
                self._done(self._waiting.popleft()[0], CONNECTION_ERROR)
                if self._waiting and not self._closed:
                    self._grow()
            return
        self._opening -= 1
        if self._closed:
            conn.transport.close()  # type: ignore[union-attr]
            return
        self._all.add(conn)
        self.peak = max(self.peak, len(self._all))
        self._next(conn)

    def _next(self, conn: _Connection) -> None:
        if self._waiting:
            conn.send(*self._waiting.popleft())
        else:
            self._idle.append(conn)

    def answered(self, conn: _Connection, key: int, status: int, reusable: bool) -> None:
        self._done(key, status)
        if reusable and not self._closed:
            self._next(conn)

    def lost(self, conn: _Connection, key: int) -> None:
        self._all.discard(conn)
        if conn in self._idle:
            self._idle.remove(conn)
        if key >= 0:
            self._done(key, CONNECTION_ERROR)
        if self._waiting and not self._closed:  # requests queued behind a lost connection still need one
            self._grow()

    @property
    def connections(self) -> int:
        return len(self._all)

    def close(self) -> None:
        """Drop every connection; requests still in flight or queued get no answer."""
        self._closed = True
        self._waiting.clear()
        for t in self._tasks:
            t.cancel()
        for conn in list(self._all):
            conn.key = -1
            if conn.transport is not None:
                conn.transport.close()
        self._all.clear()
        self._idle.clear()
