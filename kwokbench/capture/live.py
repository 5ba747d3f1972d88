"""Reading a live cluster for ``capture``: paginated LIST calls of nodes and pods, nothing else.

No request here writes: the only verb is GET on a collection (``limit``/``continue`` pages of
:data:`PAGE` objects, as ``kubectl get`` pages), so capturing a production cluster needs only ``list`` on
nodes and pods. A cluster that cannot be read becomes one :class:`~kwokbench.errors.ClusterError` naming
the server and the reason in words (connection refused, an unknown host name, a certificate the
kubeconfig's CA does not vouch for, credentials refused, permission missing).
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from typing import Any

import aiohttp

from kwokbench.cluster.api import Api
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.errors import ApiError, ClusterError

PAGE = 500
"""Objects per LIST page (kubectl's default chunk size)."""
TIMEOUT = 60.0
"""Seconds one page may take."""
RELISTS = 2
"""Times a listing starts again when its continue token expires (410) half-way through."""


def reason(e: BaseException) -> str:
    """Why a request failed, in words: the HTTP status, or the network failure under an ``ApiError``."""
    if isinstance(e, ApiError) and e.status is not None:
        detail = str(e).split(": HTTP ", 1)[-1]
        if e.status == 401:
            return f"HTTP {detail}: the server refused the kubeconfig's credentials"
        if e.status == 403:
            return f"HTTP {detail} (capture needs permission to list nodes and pods)"
        return f"HTTP {detail}"
    cause = e.__cause__ if isinstance(e, ApiError) and e.__cause__ is not None else e
    if isinstance(cause, aiohttp.ClientConnectorCertificateError):
        return f"TLS: the server's certificate is not trusted ({cause.certificate_error})"
    if isinstance(cause, aiohttp.ClientSSLError | ssl.SSLError):
        return f"TLS: {getattr(cause, 'os_error', cause)}"
    if isinstance(cause, aiohttp.ClientConnectorDNSError):
        return f"DNS: cannot resolve {cause.host}"
    if isinstance(cause, aiohttp.ClientConnectorError):
        os_error = cause.os_error
        if isinstance(os_error, ConnectionRefusedError):
            return "connection refused"
        return os_error.strerror or str(os_error) if isinstance(os_error, OSError) else str(cause)
    if isinstance(cause, TimeoutError):
        return f"no answer within {TIMEOUT:g} s"
    if isinstance(cause, OSError) and cause.strerror:
        return f"{cause.strerror}: {cause.filename}" if cause.filename else cause.strerror
    return str(e)


async def list_all(api: Api, path: str, page: int = PAGE) -> list[dict[str, Any]]:
    """Every object of a collection, page by page; a continue token that expired mid-way starts it again."""
    for _ in range(RELISTS + 1):
        items: list[dict[str, Any]] = []
        cont = ""
        while True:
            params = {"limit": str(page), **({"continue": cont} if cont else {})}
            try:
                doc = await api.json("GET", path, params=params, ok=(200,), timeout=TIMEOUT)
            except ApiError as e:
                if e.status == 410 and cont:
                    break
                raise
            items += doc.get("items") or []
            cont = (doc.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items
    raise ApiError(f"GET {path}: the continue token expired {RELISTS + 1} times; the listing is too slow for "
                   "the server's compaction, try again", 410)


async def read_cluster(creds: Credentials, namespaces: Sequence[str], where: str,
                       page: int = PAGE) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(nodes, pods) of the cluster; pods of all namespaces, or of ``namespaces``. ``where`` names the cluster
    in the error of one that cannot be read."""
    if not creds.server:
        raise ClusterError(f"{where}: the kubeconfig names no server")
    try:
        async with Api(creds, connections=4, timeout=TIMEOUT) as api:
            nodes = await list_all(api, "/api/v1/nodes", page)
            pods: list[dict[str, Any]] = []
            for path in ([f"/api/v1/namespaces/{ns}/pods" for ns in namespaces] or ["/api/v1/pods"]):
                pods += await list_all(api, path, page)
    except ApiError as e:
        raise ClusterError(f"cannot read the cluster at {creds.server} ({where}): {reason(e)}") from e
    except OSError as e:  # the kubeconfig's CA or client key does not load (ssl.SSLError is an OSError)
        raise ClusterError(f"cannot use the TLS files of {where}: {reason(e)}") from e
    return nodes, pods
