"""Reading a live cluster for ``capture``: paginated LIST calls of nodes and pods, and of the DRA objects
(DeviceClasses, ResourceSlices, ResourceClaims and their templates) where the cluster serves them, nothing else.

No request here writes: the only verb is GET on a collection (``limit``/``continue`` pages of
:data:`PAGE` objects, as ``kubectl get`` pages), so capturing a production cluster needs only ``list`` on
nodes and pods (and on the DRA objects to capture those: without it they are left out, and capture.json says
so). A cluster that cannot be read becomes one :class:`~kwokbench.errors.ClusterError` naming
the server and the reason in words (connection refused, an unknown host name, a certificate the
kubeconfig's CA does not vouch for, credentials refused, permission missing).
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
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


DRA_API = "/apis/resource.k8s.io/v1"
DRA_COLLECTIONS = ("deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates")
"""What a DRA cluster adds to a capture (resource.k8s.io/v1, GA since Kubernetes 1.34): the classes and the
slices are cluster-wide, the claims and their templates namespaced."""


@dataclass(frozen=True)
class Listed:
    """What a capture read: nodes and pods, and the DRA objects (``dra`` empty when the cluster serves no
    resource.k8s.io/v1, or the credentials may not list them: ``dra_note`` says which)."""

    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    dra: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    dra_note: str | None = None


async def _read_dra(api: Api, namespaces: Sequence[str], page: int) -> tuple[dict[str, list[dict[str, Any]]],
                                                                            str | None]:
    """The DRA objects by collection; none, with why, when the API is not served (404) or not listable (403):
    a capture of nodes and pods needs no more than their permission."""
    out: dict[str, list[dict[str, Any]]] = {}
    try:
        for name in DRA_COLLECTIONS:
            if name in ("deviceclasses", "resourceslices") or not namespaces:
                out[name] = await list_all(api, f"{DRA_API}/{name}", page)
            else:
                out[name] = [o for ns in namespaces for o in await list_all(
                    api, f"{DRA_API}/namespaces/{ns}/{name}", page)]
    except ApiError as e:
        if e.status == 404:
            return {}, "the cluster serves no resource.k8s.io/v1 (DRA)"
        if e.status == 403:
            return {}, f"not listed: {reason(e)} (DRA needs list on {', '.join(DRA_COLLECTIONS)})"
        raise
    return out, None


async def read_cluster(creds: Credentials, namespaces: Sequence[str], where: str, page: int = PAGE) -> Listed:
    """Nodes, pods (of all namespaces, or of ``namespaces``) and DRA objects of the cluster. ``where`` names the
    cluster in the error of one that cannot be read."""
    if not creds.server:
        raise ClusterError(f"{where}: the kubeconfig names no server")
    try:
        async with Api(creds, connections=4, timeout=TIMEOUT) as api:
            nodes = await list_all(api, "/api/v1/nodes", page)
            pods: list[dict[str, Any]] = []
            for path in ([f"/api/v1/namespaces/{ns}/pods" for ns in namespaces] or ["/api/v1/pods"]):
                pods += await list_all(api, path, page)
            dra, note = await _read_dra(api, namespaces, page)
    except ApiError as e:
        raise ClusterError(f"cannot read the cluster at {creds.server} ({where}): {reason(e)}") from e
    except OSError as e:  # the kubeconfig's CA or client key does not load (ssl.SSLError is an OSError)
        raise ClusterError(f"cannot use the TLS files of {where}: {reason(e)}") from e
    return Listed(nodes, pods, dra, note)
