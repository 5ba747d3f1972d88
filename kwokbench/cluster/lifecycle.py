"""``up`` as one function: toolchain → kwokctl cluster → Ready nodes, with the time each step took."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, Kwokctl
from kwokbench.cluster.nodes import NodeGroup, NodesResult, create_nodes, wait_service_account
from kwokbench.cluster.objects import apply_crds
from kwokbench.errors import ClusterError, KwokbenchError
from kwokbench.manifests import ManifestFactory
from kwokbench.progress import Reporter, Silent


@dataclass
class UpResult:
    cluster: ClusterInfo
    nodes: NodesResult | None
    timings: dict[str, float] = field(default_factory=dict)


def check_node_groups(groups: list[NodeGroup]) -> None:
    """Render each group's node template as ``create_nodes`` will: a broken template, a param that is not a
    quantity or an oversized object fails (one line, naming the group) before a cluster exists, not after."""
    for g in groups:
        ManifestFactory(g.template, {**g.params, "group": g.name}, f"kb-{g.name}")


def bring_up(kwokctl: Kwokctl, opts: ClusterOptions, groups: list[NodeGroup],
             reporter: Reporter | None = None, node_timeout: float = 300.0,
             keep_logs: Path | None = None) -> UpResult:
    """Toolchain, cluster, Ready nodes. A cluster that fails on the way is deleted, its component logs kept in
    ``keep_logs`` (else under the kwokbench home, :meth:`Kwokctl.abandon`), and the error says which component
    had stopped and why."""
    rep = reporter or Silent()
    check_node_groups(groups)
    timings: dict[str, float] = {}
    t = time.monotonic()
    kwokctl.toolchain.install("auto", rep)
    timings["toolchain"] = time.monotonic() - t
    t = time.monotonic()
    info = kwokctl.create(opts, rep, keep_logs)
    nodes = None
    try:
        asyncio.run(wait_service_account(info.credentials()))
        if opts.crds:
            with rep.status("installing CRDs: " + ", ".join(p.stem for p in opts.crds)):
                asyncio.run(apply_crds(info.credentials(), opts.crds))
            # a scheduler whose plugins watch these CRDs started before they existed: restart it alone
            if "kube-scheduler" not in opts.disable:
                with rep.status("restarting kube-scheduler (it now sees the CRDs)"):
                    restarted = kwokctl.restart_component(info, "kube-scheduler")
                if restarted["ready"] is None:
                    raise ClusterError(f"kube-scheduler of {opts.name} did not answer /healthz within 120s after its "
                                       f"restart (see {kwokctl.cluster_dir(opts.name) / 'logs/kube-scheduler.log'})")
        timings["components ready"] = time.monotonic() - t
        k = opts.kwok_controllers
        if k > 1:
            t = time.monotonic()
            with rep.status(f"starting {k - 1} more kwok controllers (nodes in {k} partitions)"):
                kwokctl.start_kwok_controllers(info, k)
            timings["kwok controllers ready"] = time.monotonic() - t
        total = sum(g.count for g in groups)
        if total:
            with rep.counter(f"creating {total} nodes", total) as advance:
                nodes = asyncio.run(create_nodes(info.credentials(), groups, timeout=node_timeout,
                                                 on_ready=advance, partitions=k,
                                                 stopped=lambda: kwokctl.stopped(opts.name)))
            timings["nodes created"] = nodes.create_seconds
            timings["nodes ready"] = nodes.ready_seconds
    except KwokbenchError as e:
        e.args = (f"{e}{kwokctl.abandon(opts.name, keep_logs, rep)}",)
        raise
    except BaseException:
        kwokctl.delete(opts.name)
        raise
    return UpResult(info, nodes, timings)
