"""A stand-in for :class:`kwokbench.cluster.api.Api` in unit tests of code that talks to the apiserver through it
(monkeypatched over the module's ``Api``): it answers from the test's own listing and records every request, so a
test asserts what was asked for. A real apiserver answers in tests/e2e."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

Request = tuple[str, str, dict[str, str] | None, Any]
"""(method, path, query parameters, body as JSON) of one request."""


class StandInApi:
    """Lists (``json`` GETs) answer ``{"items": listing(path, params)}``; every other request succeeds (201 for a
    POST, else 200) with an empty object."""

    def __init__(self, listing: Callable[[str, dict[str, str] | None], list[dict[str, Any]]] = lambda p, q: []) \
            -> None:
        self.listing = listing
        self.requests: list[Request] = []

    def __call__(self, *args: object, **kw: object) -> StandInApi:
        return self  # in place of the class: ``Api(creds)`` is this

    async def __aenter__(self) -> StandInApi:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def json(self, method: str, path: str, obj: Any = None, params: dict[str, str] | None = None,
                   **kw: object) -> Any:
        self.requests.append((method, path, params, obj))
        return {"items": self.listing(path, params)} if method == "GET" else {}

    async def raw(self, method: str, path: str, body: bytes | None = None, params: dict[str, str] | None = None,
                  **kw: object) -> tuple[int, bytes]:
        self.requests.append((method, path, params, orjson.loads(body) if body else None))
        return (201 if method == "POST" else 200), b"{}"
