"""Every pinned external version, in one place.

A run records these in its ``meta.json``; changing one changes the cache key, so a new version is
built next to the old one instead of over it.
"""

from __future__ import annotations

KWOK = "v0.8.0"
"""sigs.k8s.io/kwok: kwokctl and the kwok controller."""

KUBERNETES = "v1.36.4"
"""k8s.io/kubernetes: apiserver, controller-manager, scheduler, kubectl (newest 1.36 patch on the proxy)."""

ETCD = "v3.6.16"
"""go.etcd.io/etcd: etcd, etcdctl, etcdutl (Kubernetes 1.36 needs 3.5.11+/3.6; Debian's 3.4 is too old)."""

SCHEDULER_PLUGINS = "v0.35.4-devel"
"""sigs.k8s.io/scheduler-plugins: kube-scheduler with Coscheduling & co, plus its CRDs. No release targets
1.36 yet; this one is built on Kubernetes 1.35, one minor behind the apiserver (inside the skew policy)."""

SCHEDULER_PLUGINS_KUBERNETES = "v1.35.4"
"""The k8s.io/kubernetes version scheduler-plugins' go.mod requires (stamped into its --version)."""

MIN_GO = (1, 26)
"""kwok v0.8.0 and Kubernetes 1.36 declare ``go 1.26.0``."""

KUEUE = "v0.19.2"
"""sigs.k8s.io/kueue: the job-queueing controller (newest release; built on k8s.io/* v0.36, no replaces)."""

YUNIKORN = "v1.8.0"
"""Apache YuniKorn (k8shim v1.8.0 with core v1.8.0-1 and scheduler-interface v1.8.0-0, the versions it
requires), built from pinned source archives (:mod:`kwokbench.components.yunikorn`): the module proxy refuses
YuniKorn's modules. It is built on Kubernetes v1.34.2 client libraries (two minors behind the apiserver)."""

YUNIKORN_KUBERNETES = "v1.34.2"
"""The k8s.io/kubernetes version YuniKorn's k8shim go.mod requires."""

WASM_EXTENSION = "v0.0.0-9b2791f"
"""kubernetes-sigs/kube-scheduler-wasm-extension at main 9b2791f (2025-11-23; its only tag, v0.1.0, is older):
its kube-scheduler with the ``wasm`` plugin, built from the pinned source archive (the proxy refuses it)."""

WASM_EXTENSION_KUBERNETES = "v1.33.4"
"""The Kubernetes version its scheduler module requires (three minors behind the control plane)."""


def skew(client: str, server: str = KUBERNETES) -> int:
    """Minor versions between a component's Kubernetes libraries and the control plane's."""
    def minor(v: str) -> int:
        return int(v.removeprefix("v").split(".")[1])
    return minor(server) - minor(client)
