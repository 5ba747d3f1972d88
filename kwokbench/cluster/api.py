"""A small async Kubernetes API client for the hot paths (node creation, pod submission, watches).

The official ``kubernetes`` client deserialises every response into generated models, which costs
milliseconds per object; here request bodies are pre-rendered bytes and responses stay bytes unless
the caller asks for JSON. Watches survive disconnects (resume from the last resourceVersion) and
``410 Gone`` (relist, then resume), so a timeline never silently loses an object.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import orjson

from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.errors import ApiError

if TYPE_CHECKING:
    import aiohttp

Handler = Callable[[str, dict[str, Any], float], None]
"""(event type, object, local receive time in epoch seconds)."""


class Api:
    def __init__(self, creds: Credentials, connections: int = 64, timeout: float = 60.0) -> None:
        self.creds = creds
        self._connections = connections
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._http: ModuleType | None = None

    async def __aenter__(self) -> Api:
        # aiohttp (~0.25 s to import) loads with the first client, so the code that only plans a run (validate,
        # the scenario checks) never pays for it
        import aiohttp

        self._http = aiohttp
        connector = aiohttp.TCPConnector(ssl=self.creds.ssl_context(), limit=self._connections,
                                         enable_cleanup_closed=True)
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self.creds.headers()}
        self._session = aiohttp.ClientSession(
            base_url=self.creds.server + "/", connector=connector, headers=headers,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=None),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def http(self) -> ModuleType:
        """The aiohttp module, once the client is open."""
        if self._http is None:
            raise RuntimeError("Api used outside `async with`")
        return self._http

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("Api used outside `async with`")
        return self._session

    async def raw(self, method: str, path: str, body: bytes | None = None,
                  params: dict[str, str] | None = None, timeout: float | None = None,
                  headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """One request; network failures become ApiError, HTTP status codes are returned as they are."""
        try:
            async with self.session.request(
                method, path.lstrip("/"), data=body, params=params, headers=headers,
                timeout=self.http.ClientTimeout(total=timeout or self._timeout),
            ) as resp:
                return resp.status, await resp.read()
        except (self.http.ClientError, TimeoutError) as e:
            raise ApiError(f"{method} {self.creds.server}{path}: {type(e).__name__}: {e}") from e

    async def json(self, method: str, path: str, obj: Any = None, params: dict[str, str] | None = None,
                   ok: tuple[int, ...] = (200, 201), timeout: float | None = None) -> Any:
        body = orjson.dumps(obj) if obj is not None else None
        status, data = await self.raw(method, path, body, params, timeout)
        if status not in ok:
            raise ApiError(f"{method} {path}: HTTP {status}: {status_reason(data)}", status)
        return orjson.loads(data) if data else None

    async def watch(self, path: str, handler: Handler, stop: asyncio.Event,
                    params: dict[str, str] | None = None,
                    on_error: Callable[[str], None] | None = None,
                    synced: asyncio.Event | None = None,
                    on_listed: Callable[[float], None] | None = None,
                    on_gone: Callable[[float], None] | None = None) -> None:
        """List then watch ``path`` until ``stop`` is set, calling ``handler`` for every object.

        Listed objects are delivered as ``SYNC`` events; a relist after 410 delivers them again, so
        handlers must be idempotent. ``on_error`` is told about every restart (recorded, not hidden), and
        ``on_listed`` after every list has delivered its last object, with the moment its snapshot was taken (its
        first page came, the time its objects carry): after a relist, an object not listed again went away in the
        gap, when exactly no one can say. ``on_gone`` is told, before that relist, since when the
        watch has been blind: the moment its last stream ended or last delivered a line (a stream that broke, then
        reconnects refused, then the 410 — the gap is all of it, not the 410's moment).
        """
        # stop cancels the stream once, instead of racing a new task against every line read
        loop = asyncio.ensure_future(self._watch_loop(path, handler, stop, dict(params or {}), on_error, synced,
                                                      on_listed, on_gone))
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({loop, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (loop, stopped):
                t.cancel()
            await asyncio.gather(loop, stopped, return_exceptions=True)
        exc = loop.exception() if loop.done() and not loop.cancelled() else None
        if exc is not None:  # an unexpected failure of the loop itself (expected ones are retried inside)
            raise exc

    async def _watch_loop(self, path: str, handler: Handler, stop: asyncio.Event, params: dict[str, str],
                          on_error: Callable[[str], None] | None, synced: asyncio.Event | None,
                          on_listed: Callable[[float], None] | None = None,
                          on_gone: Callable[[float], None] | None = None) -> None:
        rv = ""
        need_list = True
        whole = [time.time()]
        """Until when the watch is known to have missed nothing (a list's end, a live stream's last moment)."""
        while not stop.is_set():
            try:
                if need_list:
                    rv, taken = await self._list_into(path, params, handler)
                    need_list = False
                    whole[0] = time.time()
                    if on_listed is not None:
                        on_listed(taken)
                    if synced is not None:
                        synced.set()
                rv = await self._watch_once(path, params, rv, handler, whole)
            except _Gone:
                need_list = True
                if on_error:
                    on_error(f"watch {path}: resourceVersion {rv} expired (410), relisting")
                if on_gone is not None:
                    on_gone(whole[0])
            except ApiError as e:
                if on_error:
                    on_error(f"watch {path}: {e}; retrying")
                await _sleep_or_stop(stop, 0.5)

    async def _list_into(self, path: str, params: dict[str, str], handler: Handler) -> tuple[str, float]:
        """The list's resourceVersion and when its snapshot was taken (its first page came)."""
        cont = ""
        taken = 0.0
        while True:
            p = {**params, "limit": "5000"}
            if cont:
                p["continue"] = cont
            doc = await self.json("GET", path, params=p, timeout=300)
            now = time.time()
            taken = taken or now
            for item in doc.get("items") or []:
                handler("SYNC", item, now)
            cont = doc.get("metadata", {}).get("continue", "")
            if not cont:
                return str(doc["metadata"]["resourceVersion"]), taken

    async def _watch_once(self, path: str, params: dict[str, str], rv: str, handler: Handler,
                          whole: list[float]) -> str:
        """One watch stream from ``rv``; ``whole[0]`` moved to each moment the stream is known alive (its lines,
        its end, its break)."""
        p = {**params, "watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true",
             "timeoutSeconds": "300"}
        connected = False
        try:
            async with self.session.get(path.lstrip("/"), params=p,
                                        timeout=self.http.ClientTimeout(total=None, sock_read=None)) as resp:
                if resp.status == 410:
                    raise _Gone()
                if resp.status != 200:
                    raise ApiError(f"watch {path}: HTTP {resp.status}: {status_reason(await resp.read())}", resp.status)
                connected = True
                async for line in resp.content:
                    if not line.strip():
                        continue
                    ev = orjson.loads(line)
                    obj = ev.get("object") or {}
                    typ = ev.get("type", "")
                    if typ == "ERROR":  # how the apiserver refuses a stale resourceVersion (410), or fails
                        if obj.get("code") == 410:
                            raise _Gone()
                        raise ApiError(f"watch {path}: {obj.get('message', obj)}")
                    whole[0] = time.time()
                    rv = str(obj.get("metadata", {}).get("resourceVersion", rv))
                    if typ != "BOOKMARK":
                        handler(typ, obj, time.time())
                whole[0] = time.time()
                return rv  # server closed the watch (timeoutSeconds): resume from rv
        except (self.http.ClientError, TimeoutError) as e:
            if connected:  # the stream broke now: nothing was missed before it
                whole[0] = time.time()
            raise ApiError(f"watch {path}: {type(e).__name__}: {e}") from e


class _Gone(Exception):
    pass


class WatchGaps:
    """What a watch (:meth:`Api.watch`) missed. Fed each delivered object (:meth:`seen`), the 410 (:meth:`gone`,
    with since when the watch has been blind) and the end of each list (:meth:`listed`): after a relist, an
    object seen before and not listed again went away in the gap — when exactly, no one can say. Each gap is
    kept (from, to, seconds, the objects that vanished in it)."""

    def __init__(self) -> None:
        self.gaps: list[dict[str, Any]] = []
        self._live: set[tuple[str, str]] = set()
        """Objects seen and not seen deleted: (namespace, name)."""
        self._from: float | None = None
        self._relisted: set[tuple[str, str]] = set()

    def seen(self, typ: str, key: tuple[str, str]) -> None:
        if typ == "DELETED":
            self._live.discard(key)
        else:
            self._live.add(key)
            if typ == "SYNC" and self._from is not None:
                self._relisted.add(key)

    def gone(self, since: float) -> None:
        if self._from is None:
            self._from = since
            self._relisted = set()

    def listed(self, taken: float) -> tuple[float, float, list[tuple[str, str]]] | None:
        """A list whose snapshot was taken at ``taken`` delivered its last object: the gap it closed (from, to,
        the objects that vanished), if any."""
        if self._from is None:
            return None
        start, now = self._from, max(taken, self._from)
        gone = sorted(self._live - self._relisted)
        self._live.difference_update(gone)
        self.gaps.append({"from": start, "to": now, "seconds": round(now - start, 3),
                          "vanished": [f"{ns}/{name}" if ns else name for ns, name in gone]})
        self._from = None
        return start, now, gone


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


def status_reason(data: bytes) -> str:
    try:
        doc = orjson.loads(data)
        return str(doc.get("message") or doc)[:300]
    except orjson.JSONDecodeError:
        return data[:300].decode(errors="replace")


async def gather_limited(jobs: list[Callable[[], Awaitable[Any]]], concurrency: int) -> list[Any]:
    """Run coroutine factories with at most ``concurrency`` in flight; results in order."""
    sem = asyncio.Semaphore(concurrency)

    async def one(job: Callable[[], Awaitable[Any]]) -> Any:
        async with sem:
            return await job()

    return await asyncio.gather(*(one(j) for j in jobs))

