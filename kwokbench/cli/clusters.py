"""The Cluster panel: ``up``, ``status``, ``down`` and ``capture``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kwokbench.cli.app import (
    PANEL_CLUSTER,
    app,
    handled,
    parse_params,
)
from kwokbench.errors import KwokbenchError, ScenarioError

# ---- cluster lifecycle ----------------------------------------------------------------------------


@app.command(rich_help_panel=PANEL_CLUSTER)
@handled
def up(
    name: Annotated[str, typer.Option(help="Cluster name.")] = "kwokbench",
    nodes: Annotated[int | None, typer.Option(min=0, help="Number of fake nodes to create [default: 10].")] = None,
    node_template: Annotated[str, typer.Option(help="Node template (path or builtin name).")] = "node",
    scenario: Annotated[Path | None, typer.Option(help=(
        "Create the cluster this scenario describes instead: its node groups with their DRA devices, and the kwok "
        "stages its workloads need (the stock kube-scheduler); runs then share it with --cluster."))] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="With --scenario: override a field.")] = None,
    param: Annotated[list[str] | None, typer.Option(help="Node template parameter key=value (repeatable).")] = None,
    scheduler_config: Annotated[Path | None, typer.Option(help="KubeSchedulerConfiguration file.")] = None,
    qps_limits: Annotated[bool, typer.Option("--qps-limits/--no-qps-limits",
                                             help="Keep the components' client QPS limits and APF "
                                             "(default: off, as a throughput benchmark needs).")] = False,
    prometheus: Annotated[bool, typer.Option(help="Also run Prometheus (kwokctl --prometheus-port).")] = False,
    apiserver_port: Annotated[int | None, typer.Option(help="Fixed apiserver port (default: a free one).")] = None,
    kubeconfig: Annotated[Path | None, typer.Option(help="Attach to this existing cluster instead of creating "
                                                    "one (bring your own cluster).")] = None,
    context: Annotated[str | None, typer.Option(help="With --kubeconfig: the context to use.")] = None,
    yes_this_is_a_test_cluster: Annotated[bool, typer.Option(
        "--yes-this-is-a-test-cluster", help="With --kubeconfig: do not ask before creating fake nodes.")] = False,
    kwok_controllers: Annotated[str, typer.Option(
        "--kwok-controllers", metavar="K", help="kwok controllers sharing the fake nodes (1-16), each managing the "
        "nodes labelled kwokbench.io/kwok-partition=i.")] = "1",
) -> None:
    """Create a kwokctl cluster with N Ready fake nodes (or attach to an existing one with --kubeconfig)."""
    from kwokbench.cli import console
    from kwokbench.cluster import ClusterOptions, Kwokctl, NodeGroup, bring_up
    from kwokbench.cluster.kwok_controllers import check_count
    from kwokbench.cluster.kwokctl import free_port
    from kwokbench.cluster.lifecycle import check_node_groups
    from kwokbench.components import cluster_options
    from kwokbench.manifests import resolve_template
    from kwokbench.plan import node_groups
    from kwokbench.scenario import load_scenario
    from kwokbench.scheduler_kinds import SchedulerSpec

    k = check_count(kwok_controllers)
    described = None
    if scenario is not None:
        if nodes is not None or param or node_template != "node" or scheduler_config is not None:
            raise ScenarioError("--scenario gives the nodes: --nodes, --param, --node-template and "
                                "--scheduler-config do not go with it")
        described = load_scenario(scenario, set_ or [])
        groups = node_groups(described, scenario.parent)
    elif set_:
        raise ScenarioError("--set goes with --scenario")
    else:
        groups = [NodeGroup("default", 10 if nodes is None else nodes, resolve_template(node_template),
                            parse_params(param or []))]
    check_node_groups(groups)  # before asking to attach, or building the toolchain
    if kubeconfig is not None:
        _attach(name, kubeconfig, context, groups, yes_this_is_a_test_cluster, k)
        return
    if context is not None or yes_this_is_a_test_cluster:
        raise ScenarioError("--context and --yes-this-is-a-test-cluster only go with --kubeconfig")
    if scheduler_config is not None and not scheduler_config.is_file():
        raise ScenarioError(f"--scheduler-config {scheduler_config}: no such file")
    if described is not None:
        opts = cluster_options(described, (scenario or Path()).parent, SchedulerSpec(), name,
                               Kwokctl().toolchain)
        opts.qps_limits, opts.apiserver_port, opts.kwok_controllers = qps_limits or opts.qps_limits, apiserver_port, k
        if prometheus and opts.prometheus_port is None:
            opts.prometheus_port = free_port()
    else:
        opts = ClusterOptions(name=name, qps_limits=qps_limits, scheduler_config=scheduler_config,
                              apiserver_port=apiserver_port, prometheus_port=free_port() if prometheus else None,
                              kwok_controllers=k)
    res = bring_up(Kwokctl(), opts, groups, console.RichReporter())
    info = res.cluster
    rows = [["kubeconfig", str(info.kubeconfig)], *[[f"{k} metrics", v] for k, v in
                                                    info.metrics_endpoints().items()]]
    if info.prometheus_port:
        rows.append(["prometheus", f"http://127.0.0.1:{info.prometheus_port}"])
    if res.nodes and res.nodes.slices:
        rows.append(["DRA", f"{res.nodes.slices} ResourceSlices with the nodes"])
    rows += [[f"time: {k}", f"{v:.1f}s"] for k, v in res.timings.items()]
    console.table(f"cluster {info.name} is up with {res.nodes.ready if res.nodes else 0} Ready nodes",
                  ["", ""], rows)
    console.out.print(f"export KUBECONFIG={info.kubeconfig}")


def _attach(name: str, kubeconfig: Path, context: str | None, groups: list[Any], yes: bool,
            kwok_controllers: int = 1) -> None:
    import sys

    from kwokbench.cli import console
    from kwokbench.cluster import Kwokctl, attach

    if not kubeconfig.is_file():
        raise ScenarioError(f"--kubeconfig {kubeconfig}: no such file")
    ctx, server = attach.describe(kubeconfig, context)
    if not yes:
        if not sys.stdin.isatty():
            raise ScenarioError(f"refusing to create fake nodes in context {ctx!r} ({server}) without "
                                "--yes-this-is-a-test-cluster (no terminal to ask)")
        controllers = f"{kwok_controllers} kwok controllers" if kwok_controllers > 1 else "a kwok controller"
        if not typer.confirm(f"Create {sum(g.count for g in groups)} fake nodes and run {controllers} "
                             f"against context {ctx!r} at {server}? Only do this on a test cluster"):
            raise typer.Exit(1)
    k = Kwokctl()
    k.toolchain.install("auto", console.RichReporter())
    info, nodes, version = attach.attach(k.home, k.toolchain.path("kwok"), k.toolchain.path("stages.yaml"),
                                         kubeconfig, context, name, groups, console.RichReporter(),
                                         kwok_controllers)
    pids = ", ".join(str(p) for p in (info.kwok_pid, *(q for q, _ in info.more_kwok)))
    console.table(f"attached {name} to {server} (Kubernetes {version}) with {nodes.ready if nodes else 0} "
                  "Ready fake nodes", ["", ""],
                  [["kubeconfig", f"{info.kubeconfig} (context {ctx})"], ["label", f"{attach.ATTACH_LABEL}={name}"],
                   ["taint", "kwok.x-k8s.io/node=fake:NoSchedule"], ["kwok controller", f"pid {pids}"],
                   ["runs", f"kwokbench run FILE --cluster {name}"], ["remove", f"kwokbench down {name}"]])


@app.command(rich_help_panel=PANEL_CLUSTER)
@handled
def status() -> None:
    """List the clusters kwokbench owns, their components and node counts."""
    import asyncio

    from kwokbench.cli import console
    from kwokbench.cluster import ClusterInfo, Kwokctl
    from kwokbench.cluster.api import Api

    async def count_nodes(info: ClusterInfo) -> int:
        async with Api(info.credentials()) as api:
            doc = await api.json("GET", "/api/v1/nodes", params={"limit": "1"}, timeout=10)
            return len(doc["items"]) + int(doc["metadata"].get("remainingItemCount", 0))

    k = Kwokctl()
    rows = []
    for name in k.names():
        try:
            comps = k.components(name)
            info = k.info(name)
            n = str(asyncio.run(count_nodes(info))) if comps.get("kube-apiserver") == "Ready" else "-"
            comp = ", ".join(f"{c}={s}" for c, s in comps.items())
            rows.append([name, n, comp, str(info.kubeconfig)])
        except KwokbenchError as e:
            rows.append([name, "-", console.styled("problem", str(e)), ""])
    from kwokbench.cluster import attach

    for name in attach.names(k.home):
        a = attach.get(k.home, name)
        if a is not None:
            rows.append([name, "-", f"attached to {a.server} (kwok pid {a.kwok_pid})", str(a.kubeconfig)])
    if not rows:
        console.info("no kwokbench clusters")
        return
    console.table("kwokbench clusters", ["name", "nodes", "components", "kubeconfig"], rows)


@app.command(rich_help_panel=PANEL_CLUSTER)
@handled
def down(
    name: Annotated[str | None, typer.Argument(help="Cluster to delete.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Delete every cluster kwokbench owns.")] = False,
) -> None:
    """Delete a cluster (or all of kwokbench's); no process of it is left running. For an attachment
    (up --kubeconfig): delete exactly what kwokbench labelled there and stop its kwok controller."""
    from kwokbench.cli import console
    from kwokbench.cluster import Kwokctl, attach

    k = Kwokctl()
    attached = attach.names(k.home)
    names = [*k.names(), *attached] if all_ else [name or "kwokbench"]
    if all_ and name:
        raise ScenarioError("give a cluster name or --all, not both")
    for n in names:
        if n in attached:
            counts = attach.detach(k.home, n, console.RichReporter())
            order = ["pods", "jobs", "podgroups", "nodes", "namespaces"]
            console.info(f"detached {n}: deleted " + ", ".join(f"{counts[kind]} {kind}" for kind in order
                                                               if kind in counts))
            continue
        pids = k.delete(n, console.RichReporter())
        console.info(f"deleted {n} (stopped {len(pids)} processes)")
    if all_ and not names:
        console.info("no kwokbench clusters")


# ---- traces ---------------------------------------------------------------------------------------


@app.command(rich_help_panel=PANEL_CLUSTER)
@handled
def capture(
    kubeconfig: Annotated[Path, typer.Option(help="Kubeconfig of the cluster to read (a token or a client "
                                             "certificate; exec plugins are not run).", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write nodes.csv, pods.csv, "
                                         "scenario.yaml and capture.json into (new or empty).", show_default=False)],
    context: Annotated[str | None, typer.Option(help="The kubeconfig context (default: its current one).")] = None,
    namespace: Annotated[list[str] | None, typer.Option(help="Only the pods of this namespace (repeatable; "
                                                        "default: all namespaces).")] = None,
    keep_names: Annotated[bool, typer.Option("--keep-names", help="Keep names and label values as they are "
                                             "(default: salted hashes).")] = False,
    salt: Annotated[str | None, typer.Option(help="Secret salt of the hashes, to anonymise this capture like an "
                                             "earlier one (default: a random one, printed and written to "
                                             "capture.json).")] = None,
    force: Annotated[bool, typer.Option(help="Write into a folder that is not empty, replacing those four "
                                        "files.")] = False,
) -> None:
    """Capture a live cluster's nodes and pods as a kwokbench trace, with a scenario that replays it. Read-only:
    LIST calls on nodes and pods, never a write. Pods of DaemonSets and static (mirror) pods are skipped; names
    and label values become salted hashes unless --keep-names; capture.json records the salt and what was
    left out."""
    from kwokbench.capture import capture as capture_cluster
    from kwokbench.cli import console

    res = capture_cluster(kubeconfig, context, output, namespace or [], salt, keep_names, force,
                          console.RichReporter())
    info = res.info
    skipped = ", ".join(f"{v['pods']} {k}" for k, v in info["skipped"].items()) or "none"
    dropped = ", ".join(f"{v['objects']} {k}" for k, v in info["dropped"].items()) or "none"
    rows = [["from", f"{info['server']} (context {info['context']})"],
            ["nodes", f"{info['nodes']}" + (f" ({len(info['not_ready_nodes'])} NotReady)"
                                            if info["not_ready_nodes"] else "")],
            ["pods", str(info["pods"])], ["pods skipped", skipped], ["placement rules dropped", dropped],
            ["names", "kept" if res.salt is None else "salted hashes"]]
    console.table(f"captured {info['nodes']} nodes and {info['pods']} pods into {res.out}", ["", ""], rows)
    if res.salt is not None and res.salt_generated:
        console.out.print(f"salt: {res.salt} (in {res.out / 'capture.json'}; keep it secret, and pass it as "
                          "--salt to anonymise a later capture alike)")
    console.out.print(f"replay it: kwokbench run {res.out / 'scenario.yaml'}")
