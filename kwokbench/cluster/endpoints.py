"""A component's metrics endpoint: what the scraper asks each second and the profiler asks for pprof."""

from __future__ import annotations

from dataclasses import dataclass

from kwokbench.cluster.kubeconfig import Credentials


@dataclass(frozen=True)
class Endpoint:
    component: str
    url: str
    creds: Credentials | None
    """Client certificate (or bearer token) to present (None: plain HTTP)."""
    pprof: str | None = None
    """Base URL of its ``/debug/pprof/`` (None: beside ``/metrics``, as Kubernetes components serve it)."""
