"""Every pinned external version, in one place.

A run records these in its ``meta.json``; changing one changes the cache key, so a new version is
built next to the old one instead of over it.
"""

from __future__ import annotations

import re

KWOK = "v0.8.0"
"""sigs.k8s.io/kwok: kwokctl and the kwok controller."""

KUBERNETES = "v1.36.4"
"""k8s.io/kubernetes: apiserver, controller-manager, scheduler, kubectl — the default; a scenario's
``cluster.kubernetes_version`` or a variant's ``kubernetes:`` picks another release tag (:func:`kubernetes_tag`),
built from Go modules into its own cache folder."""

OLDEST_KUBERNETES = "v1.35.0"
"""The oldest release kwokbench builds and runs: kwok v0.8.0's flags, etcd 3.6 and the resource.k8s.io/v1 (DRA)
objects kwokbench creates all hold from 1.35 on."""

_TAG = re.compile(r"^v1\.(\d+)\.(\d+)(?:-(alpha|beta|rc)\.(\d+))?$")
_PRE = {"alpha": 0, "beta": 1, "rc": 2, None: 3}

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


MAX_SKEW = 3
"""A scheduler kind's client libraries may be this many minor releases older than the control plane, and never
newer (kube-scheduler's own skew policy allows one older; the reference WASM extension's v1.33 libraries on
v1.36 are the widest measured to pass their e2e tests)."""


def skew_problem(libraries: str, control_plane: str) -> str | None:
    """Why a scheduler built on ``libraries`` is not run against ``control_plane``, or None."""
    n = skew(libraries, control_plane)
    if n < 0:
        return f"its Kubernetes {libraries} libraries are newer than the control plane's {control_plane}"
    if n > MAX_SKEW:
        return (f"its Kubernetes {libraries} libraries are {n} minor releases older than the control plane's "
                f"{control_plane} (at most {MAX_SKEW})")
    return None


def skew(client: str, server: str = KUBERNETES) -> int:
    """Minor versions between a component's Kubernetes libraries and the control plane's."""
    def minor(v: str) -> int:
        return int(v.removeprefix("v").split(".")[1])
    return minor(server) - minor(client)


def tag_key(tag: str) -> tuple[int, int, int, int]:
    """Release order of a Kubernetes tag: v1.37.0-alpha.1 < v1.37.0-rc.0 < v1.37.0 < v1.37.1."""
    m = _TAG.match(tag)
    if not m:
        raise ValueError(f"{tag!r} is not a Kubernetes release tag (e.g. v1.37.2, v1.38.0-rc.1)")
    return int(m[1]), int(m[2]), _PRE[m[3]], int(m[4] or 0)


def kubernetes_tag(tag: str) -> str:
    """``tag`` if kwokbench can build and run it (a release tag from :data:`OLDEST_KUBERNETES` on); else a
    ValueError that says why in one line."""
    key = tag_key(tag)
    if key < tag_key(OLDEST_KUBERNETES):
        raise ValueError(f"Kubernetes {tag} is older than {OLDEST_KUBERNETES}, the oldest release kwokbench runs")
    return tag

