"""The submitter's HTTP/1.1 pool against real local servers: statuses, keep-alive, chunked and
closing responses, lost and refused connections. (Against the apiserver: tests/e2e/test_run.py.)"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from kwokbench.load.http1 import CONNECTION_ERROR, Pool, build_request, request_prefix


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def post_all(server: str, bodies: list[bytes], limit: int, path: str = "/objects",
                   timeout: float = 10.0) -> tuple[dict[int, int], int]:
    """Post every body, wait for every answer; (status by key, connections the pool ended with)."""
    got: dict[int, int] = {}
    all_done = asyncio.Event()

    def done(key: int, status: int) -> None:
        assert key not in got, f"request {key} answered twice"
        got[key] = status
        if len(got) == len(bodies):
            all_done.set()

    pool = Pool(server, None, limit, done)
    prefix = request_prefix(server, path, {"Content-Type": "application/json"})
    for k, b in enumerate(bodies):
        pool.post(k, build_request(prefix, b))
    try:
        await asyncio.wait_for(all_done.wait(), timeout)
        return got, pool.connections
    finally:
        pool.close()


async def post_to_stream_server(handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
                                n: int, limit: int) -> dict[int, int]:
    """Post n bodies to a raw TCP server (for answers no HTTP server library would give)."""
    port = free_port()
    server = await asyncio.start_server(handler, "127.0.0.1", port)
    async with server:
        return (await post_all(f"http://127.0.0.1:{port}", [b"{}"] * n, limit=limit))[0]


async def serve(handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


def test_statuses_bodies_and_keep_alive() -> None:
    peers: set[int] = set()

    async def handler(request: web.Request) -> web.StreamResponse:
        peers.add(request.transport.get_extra_info("peername")[1])  # type: ignore[union-attr]
        body = await request.read()
        assert request.path == "/api/objects" and request.headers["Content-Type"] == "application/json"
        n = int(body.split(b"-")[1])
        if n % 10 == 0:  # a rejected request is an answer like any other, never retried
            return web.Response(status=429, text="slow down")
        if n % 10 == 1:  # chunked encoding instead of Content-Length
            resp = web.StreamResponse(status=201)
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            await resp.write(b"x" * 5000)
            await resp.write_eof()
            return resp
        await asyncio.sleep(0.001 * (n % 3))  # answers out of order across connections
        return web.Response(status=201, body=body)

    async def go() -> tuple[dict[int, int], int]:
        runner, url = await serve(handler)
        try:
            return await post_all(url + "/api", [b"pod-%d-" % i + b"y" * (i * 37) for i in range(300)], limit=8)
        finally:
            await runner.cleanup()

    got, conns = asyncio.run(go())
    assert got == {i: 429 if i % 10 == 0 else 201 for i in range(300)}
    assert 1 <= conns <= 8 and len(peers) <= 8, "connections are kept alive and bounded by the limit"


def test_server_closing_after_each_answer_gets_new_connections() -> None:
    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=201, headers={"Connection": "close"})

    async def go() -> dict[int, int]:
        runner, url = await serve(handler)
        try:
            return (await post_all(url, [b"{}"] * 50, limit=4))[0]
        finally:
            await runner.cleanup()

    assert asyncio.run(go()) == dict.fromkeys(range(50), 201)


def test_lost_and_refused_connections_fail_their_requests() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(10)  # takes the request, never answers
        writer.close()
        await writer.wait_closed()

    assert asyncio.run(post_to_stream_server(hang_up, 20, limit=4)) == dict.fromkeys(range(20), CONNECTION_ERROR)

    async def refused() -> dict[int, int]:
        return (await post_all(f"http://127.0.0.1:{free_port()}", [b"{}"] * 10, limit=3))[0]

    assert asyncio.run(refused()) == dict.fromkeys(range(10), CONNECTION_ERROR)


def test_garbage_response_is_a_connection_error() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    assert asyncio.run(post_to_stream_server(garbage, 5, limit=5)) == dict.fromkeys(range(5), CONNECTION_ERROR)


def test_unsolicited_answer_on_an_idle_connection_is_not_taken_for_a_request() -> None:
    connections = closed = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections, closed
        connections += 1
        if connections == 1:  # like a server timing out an idle connection
            await asyncio.sleep(0.05)
            writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        else:
            try:
                while (await reader.readuntil(b"\r\n\r\n")) and (await reader.readexactly(2)):
                    writer.write(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
            except asyncio.IncompleteReadError:  # the client closed the connection
                pass
        writer.close()
        await writer.wait_closed()
        closed += 1

    async def go() -> tuple[dict[int, int], int]:
        port = free_port()
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        got: dict[int, int] = {}
        async with server:
            pool = Pool(f"http://127.0.0.1:{port}", None, 1, lambda k, st: got.__setitem__(k, st))
            assert await pool.warm(1) == 1
            await asyncio.sleep(0.2)  # the 408 arrives and the connection is dropped
            prefix = request_prefix(f"http://127.0.0.1:{port}", "/", {})
            for k in range(3):
                pool.post(k, build_request(prefix, b"{}"))
            for _ in range(100):
                if len(got) == 3:
                    break
                await asyncio.sleep(0.02)
            pool.close()
            while closed < connections:  # let the server's handlers end before the loop does
                await asyncio.sleep(0.01)
        return got, connections

    got, connections = asyncio.run(go())
    assert got == dict.fromkeys(range(3), 201) and connections == 2


@pytest.mark.parametrize(("server", "path", "line"), [
    ("https://127.0.0.1:6443", "/api/v1/namespaces/a/pods", b"POST /api/v1/namespaces/a/pods HTTP/1.1\r\n"),
    ("https://h.example/k8s/", "/api/v1/pods", b"POST /k8s/api/v1/pods HTTP/1.1\r\n"),
])
def test_request_bytes(server: str, path: str, line: bytes) -> None:
    req = build_request(request_prefix(server, path, {"Authorization": "Bearer t"}), b'{"a":1}')
    assert req.startswith(line)
    assert req.endswith(b"\r\nAuthorization: Bearer t\r\nContent-Length: 7\r\n\r\n{\"a\":1}")
