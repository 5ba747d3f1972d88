"""The typer layer: parse arguments, call the core, render. No logic lives here.

Heavy imports (pandas, aiohttp, the kubernetes client) happen inside commands so ``--help`` is instant.
A :class:`~kwokbench.errors.KwokbenchError` becomes one line on stderr and its exit code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from kwokbench import __version__
from kwokbench.errors import KwokbenchError, ScenarioError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Scheduler scalability harness for Kubernetes on KWOK clusters.")
# `kwokbench --help` groups the commands by what they act on, in the order of the data flow
PANEL_CLUSTER, PANEL_RUN, PANEL_ANALYSE, PANEL_HISTORY = "Cluster", "Run", "Analyse", "History"
PANEL_TOOLCHAIN = "Toolchain"
tools_app = typer.Typer(no_args_is_help=True, help="Provision and check the offline toolchain.")
app.add_typer(tools_app, name="tools", rich_help_panel=PANEL_TOOLCHAIN)

F = TypeVar("F", bound=Callable[..., Any])


def handled(fn: F) -> F:
    """Turn expected errors into one clear line and an exit code; Ctrl-C into exit 130."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from kwokbench.cli import console

        try:
            return fn(*args, **kwargs)
        except KwokbenchError as e:
            console.error(str(e))
            raise typer.Exit(e.exit_code) from None
        except KeyboardInterrupt:
            console.error("interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kwokbench {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    pass


def parse_params(items: list[str]) -> dict[str, Any]:
    """``k=v`` pairs; values are YAML scalars/flow collections (``gpus=8``, ``labels={a: b}``)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ScenarioError(f"--param {item!r}: expected key=value")
        try:
            out[key] = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError as e:
            raise ScenarioError(f"--param {item!r}: value is not valid YAML: {e}") from e
    return out


STORE_HELP = ("A PostgreSQL database a team shares, postgresql://USER@HOST:PORT/DB (the password from "
              "~/.pgpass or PGPASSWORD; ?connect_timeout=SECONDS, default 5).")
LOCATION_HELP = ("Where the run directories can be found, recorded in the store: a URL with {run_id} filled in, "
                 "e.g. https://ci.example/artifacts/{run_id} (default: this host's name and the absolute path).")
COMMIT_HELP = ("Commit of the code under test, recorded for `history` and `detect` (default: the CI environment's, "
               "else git's where the plugin or scenario lives).")
REF_HELP = "Branch or tag of that commit."


# ---- tools ----------------------------------------------------------------------------------------


@tools_app.command("install")
@handled
def tools_install(
    what: Annotated[list[str] | None, typer.Argument(help="Only these schedulers built from pinned sources "
                                                     "(yunikorn, wasm-extension, …: `kwokbench tools doctor` "
                                                     "lists them). Default: the toolchain (kwok, "
                                                     "etcd, Kubernetes, scheduler-plugins).",
                                                     show_default=False)] = None,
    source: Annotated[str, typer.Option("--from", help="source (build from Go modules), release "
                                        "(kwokctl downloads official binaries) or auto.")] = "auto",
    source_path: Annotated[Path | None, typer.Option("--source", help="With those: a directory of the pinned "
                                                     "source archives (checked by sha256) or of source checkouts, "
                                                     "or one archive; default $KWOKBENCH_SOURCES, else the "
                                                     "upstream archives.")] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even when cached binaries are valid.")] = False,
    core_only: Annotated[bool, typer.Option(help="Skip the optional scheduler-plugins build (runs build it "
                                            "on demand when a variant uses it).")] = False,
    kubernetes: Annotated[str | None, typer.Option(help="The Kubernetes release to build (a tag from v1.35.0 on, "
                                                   "e.g. v1.37.2 or v1.38.0-rc.0), beside the others in the "
                                                   "cache; default the pinned one.", show_default=False)] = None,
) -> None:
    """Build (or download) kwok, kwokctl, Kubernetes, etcd and scheduler-plugins into the version-keyed cache;
    or, named, a scheduler built from pinned sources (yunikorn, volcano, kai, wasm-extension)."""
    from kwokbench.cli import console
    from kwokbench.scheduler_kinds import source_built
    from kwokbench.toolchain import Toolchain, versions
    from kwokbench.toolchain.install import OPTIONAL

    if what and kubernetes:
        raise ScenarioError("--kubernetes builds the control plane; a scheduler built from sources has its own")
    built = source_built()
    if what:
        unknown = [w for w in what if w not in built]
        if unknown:
            raise ScenarioError(f"tools install {unknown[0]}: not a scheduler built from sources "
                                f"(one of: {', '.join(built)})")
        for w in dict.fromkeys(what):
            binary = built[w].build(source_path, console.RichReporter(), force)
            console.info(f"{w}: {binary}")
        return
    if source_path is not None:
        raise ScenarioError("--source applies to schedulers built from pinned sources: tools install "
                            f"{' | '.join(built)} --source DIR")
    if source not in ("auto", "source", "release"):
        raise ScenarioError(f"--from {source!r}: expected source, release or auto")
    try:
        tc = Toolchain(kubernetes=versions.kubernetes_tag(kubernetes or versions.KUBERNETES))
    except ValueError as e:
        raise ScenarioError(f"--kubernetes: {e}") from e
    extras = () if core_only or source == "release" else OPTIONAL
    mode = tc.install(source, console.RichReporter(), force=force, extras=extras)  # type: ignore[arg-type]
    console.info(f"toolchain ready ({mode}) in {tc.cache / 'toolchain'}")


@tools_app.command("build-scheduler")
@handled
def tools_build_scheduler(
    plugin: Annotated[Path, typer.Argument(help="Go plugin directory: a module whose package exports Name and New.")],
    force: Annotated[bool, typer.Option(help="Rebuild even when a binary of this plugin version is cached.")] = False,
) -> None:
    """Compile an out-of-tree scheduler plugin into kube-scheduler (cached per plugin version)."""
    from kwokbench.cli import console
    from kwokbench.toolchain.plugin import build_scheduler

    binary = build_scheduler(plugin, console.RichReporter(), force=force)
    console.info(f"kube-scheduler with {plugin}: {binary}")
    console.info(f"use it in a scenario: schedulers: [{{name: mine, binary: {plugin}, config: <config enabling "
                 f"the plugin>}}] (binary paths are relative to the scenario file)")


@tools_app.command("build-wasm")
@handled
def tools_build_wasm(
    directory: Annotated[Path, typer.Argument(help="A Go module whose main package is a WASM guest.")],
    force: Annotated[bool, typer.Option(help="Rebuild even if cached.")] = False,
) -> None:
    """Compile a WebAssembly scheduler-plugin guest (GOOS=wasip1, standard Go) into the cache."""
    from kwokbench.cli import console
    from kwokbench.toolchain.wasm import build_guest

    wasm = build_guest(directory, console.RichReporter(), force)
    console.info(f"wasm guest {directory}: {wasm}")
    console.info(f"use it in a scenario: schedulers: [{{name: mine, binary: <plugins/wasm>, config: <config enabling "
                 f"Wasm>, wasm: {directory}}}]")


@tools_app.command("kinds")
@handled
def tools_kinds() -> None:
    """List the scheduler kinds a scenario's `binary:` can name (the installed entry points of group
    kwokbench.schedulers): each kind's module and whether it is built from pinned sources."""
    from importlib.metadata import entry_points

    from kwokbench.cli import console
    from kwokbench.scheduler_kinds import GROUP, registry

    where = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    rows = [[name, k.title, where.get(name, "?"), "yes" if k.recipe is not None else "no"]
            for name, k in sorted(registry().items())]
    console.table("scheduler kinds (binary:)", ["kind", "name", "module", "built from pinned sources"], rows)


@tools_app.command("doctor")
@handled
def tools_doctor() -> None:
    """Show every component with version, path and status; exit 2 if anything is missing."""
    from kwokbench.cli import console
    from kwokbench.toolchain import Toolchain
    from kwokbench.toolchain.install import check_go

    tc = Toolchain()
    rows: list[list[str]] = []
    problems: list[str] = []
    try:
        go = check_go()
        rows.append(["go", go.removeprefix("go"), str(__import__("shutil").which("go")), console.styled("ok", "ok")])
    except KwokbenchError as e:
        rows.append(["go", "-", "-", console.styled("problem", "problem")])
        problems.append(str(e))
    optional = {c.name for c in tc.components if c.optional}
    for s in tc.check():
        name = f"{s.component}/{s.binary}" if s.component in optional else s.binary
        if not s.ok and s.component in optional:
            rows.append([name, s.version, str(s.path),
                         console.styled("optional", f"{s.problem} (optional, built on demand)")])
            continue
        rows.append([name, s.version, str(s.path),
                     console.styled("ok", "ok") if s.ok else console.styled("problem", s.problem)])
        if not s.ok:
            problems.append(f"{s.binary} {s.version}: {s.problem} at {s.path}; run `kwokbench tools install`")
    from kwokbench.scheduler_kinds import source_built

    for name, r in source_built().items():
        ok, where, detail = r.status()
        rows.append([name, r.version, where, console.styled("ok", "ok " + detail) if ok else
                     console.styled("optional", f"{detail} (optional: `kwokbench tools install {name}`, or built "
                                                "on first use)")])
    console.table("kwokbench toolchain", ["component", "version", "path", "status"], rows)
    for p in problems:
        console.error(p)
    if problems:
        raise typer.Exit(2)


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


# ---- scenarios and runs ---------------------------------------------------------------------------


@app.command(rich_help_panel=PANEL_RUN)
@handled
def validate(
    file: Annotated[Path, typer.Argument(help="Scenario YAML file.")],
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a field: path=value.")] = None,
) -> None:
    """Check a scenario file (errors name the YAML line and field path) and its templates."""
    from kwokbench.cli import console
    from kwokbench.plan import check_scenario
    from kwokbench.scenario import load_scenario

    sc = load_scenario(file, set_ or [])
    check_scenario(sc, file.parent)
    nodes = sum(g.count for g in sc.cluster.node_groups)
    pods = sum(w.count for w in sc.workloads)
    console.info(f"{file}: ok — {nodes} nodes, {len(sc.workloads)} phases, {pods} objects, "
                 f"{len(sc.schedulers)} scheduler variant(s)")


@app.command(rich_help_panel=PANEL_RUN)
def schema() -> None:
    """Print the scenario JSON Schema (for editor completion)."""
    import json

    from kwokbench.scenario import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


def _end_cleanly_on_signals() -> None:
    """SIGTERM and SIGINT end a command as Ctrl-C does (KeyboardInterrupt: its clusters torn down, what it
    measured kept). A shell starting kwokbench in the background sets SIGINT to "ignore", and then Python installs
    no handler: this makes Ctrl-C / kill -INT always end the run cleanly."""
    import signal

    def on_term(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)


@app.command("run", rich_help_panel=PANEL_RUN)
@handled
def run_cmd(
    file: Annotated[Path, typer.Argument(help="Scenario YAML file.")],
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a field: path=value.")] = None,
    cluster: Annotated[str | None, typer.Option(help="Reuse this existing kwokbench cluster.")] = None,
    keep_cluster: Annotated[bool, typer.Option(help="Do not delete the cluster(s) afterwards.")] = False,
    out: Annotated[Path, typer.Option(help="Root folder for run directories.")] = Path("reports"),
    variant: Annotated[list[str] | None, typer.Option(help="Only this scheduler variant (repeatable).")] = None,
    submit_workers: Annotated[int, typer.Option(min=1, max=16, help="Submitter processes.")] = 1,
    scrape_interval: Annotated[float, typer.Option(min=0, help="Seconds between /metrics scrapes (0: off).")] = 1.0,
    repeat: Annotated[int, typer.Option(min=1, max=100, help="Runs per variant (fresh cluster each, "
                                        "variants interleaved).")] = 1,
    profile: Annotated[list[str] | None, typer.Option(help="Save a pprof CPU profile of this component over the "
                                                      "first phase: scheduler, apiserver, controller-manager "
                                                      "(repeatable).")] = None,
    shard: Annotated[str | None, typer.Option(help="Run only shard i/N of the repeats (each repeat with all its "
                                              "variants), e.g. 2/4 on the second of four machines; join the "
                                              "shards with `kwokbench merge`.")] = None,
    commit: Annotated[str | None, typer.Option(help=COMMIT_HELP)] = None,
    ref: Annotated[str | None, typer.Option(help=REF_HELP)] = None,
    store: Annotated[str | None, typer.Option(help=STORE_HELP + " Each run's row is written to it once the run "
                                              "is stored; checked before any cluster is created.")] = None,
    location: Annotated[str | None, typer.Option(help=LOCATION_HELP)] = None,
    duet: Annotated[bool, typer.Option("--duet", help="Run the scenario's two scheduler variants at the same time "
                                       "on one control plane, each on its own identical node pool (the "
                                       "scenario's `duet: true`).")] = False,
) -> None:
    """Run a scenario: cluster up, submit at the target rate, record pod timelines, store, summarise."""

    from kwokbench.cli import console
    from kwokbench.measure.profile import components
    from kwokbench.report.table import summary_rows
    from kwokbench.runner import RunOptions, run_scenario
    from kwokbench.scenario import load_scenario
    from kwokbench.shard import parse_shard

    part = parse_shard(shard) if shard is not None else None
    sc = load_scenario(file, [*(set_ or []), *(["duet=true"] if duet else [])])
    rep = console.RichReporter()
    on_stored = None
    if store:
        from kwokbench.history.store import check_location, open_store, push_runs

        check_location(location)
        shared = open_store(store)  # a store that does not answer fails now, before any cluster

        def on_stored(r: Any) -> None:
            push_runs(shared, [r.path], location, rep)

    _end_cleanly_on_signals()
    opts = RunOptions(out=out, cluster=cluster, keep_cluster=keep_cluster, submit_workers=submit_workers,
                      variants=variant or [], scrape_interval=scrape_interval, repeat=repeat,
                      profile=components(profile or []), shard=part,
                      commit=commit, ref=ref, on_stored=on_stored)
    results = run_scenario(sc, file, opts, rep)
    for r in results:
        columns, rows = summary_rows(r.summary or {})
        console.table(f"{sc.name} / {r.path.name} ({r.status})", columns, rows)
        for ph in (r.summary or {}).get("submit", []):
            if ph.get("not_accepted"):
                console.warn(f"{ph['phase']}: the cluster did not take the offered load: {ph['not_accepted']}")
        console.out.print(f"stored in {r.path}")


def _numbers(text: str, what: str, kind: type) -> list[Any]:
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ScenarioError(f"{what} {text!r}: expected comma-separated numbers, e.g. 100,1000") from None
    if not values or any(v <= 0 for v in values):
        raise ScenarioError(f"{what} {text!r}: expected positive numbers")
    return values


def _seconds(text: str, what: str) -> float:
    t = text.strip()
    try:
        return float(t[:-2]) / 1000 if t.endswith("ms") else float(t.removesuffix("s"))
    except ValueError:
        raise ScenarioError(f"{what} {text!r}: expected a duration such as 1s, 500ms or 2.5") from None


@app.command(rich_help_panel=PANEL_RUN)
@handled
def sweep(
    file: Annotated[Path, typer.Argument(help="Scenario YAML file (its first workload phase is swept).")],
    nodes: Annotated[str, typer.Option(help="Cluster sizes, comma-separated.")] = "100,1000",
    qps: Annotated[str, typer.Option(help="Submit rates (pods/s), comma-separated.")] = "50,100,200,500",
    slo_p99: Annotated[str, typer.Option("--slo-p99", help="p99 scheduling latency SLO, e.g. 1s or 500ms.")] = "1s",
    duration: Annotated[float, typer.Option(min=1, help="Seconds of load per grid point.")] = 20.0,
    min_ratio: Annotated[float, typer.Option(min=0.01, max=1.0, help="Throughput/target a point must keep.")] = 0.95,
    variant: Annotated[str | None, typer.Option(help="Scheduler variant (default: the first).")] = None,
    stop_early: Annotated[bool, typer.Option(help="Skip higher rates once a size is saturated.")] = True,
    keep_clusters: Annotated[bool, typer.Option(help="Do not delete the clusters afterwards.")] = False,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a field: path=value.")] = None,
    out: Annotated[Path, typer.Option(help="Root folder for run and sweep directories.")] = Path("reports"),
    shard: Annotated[str | None, typer.Option(help="Run only shard i/N of the grid's points, e.g. 2/4 on the "
                                              "second of four machines; join the shards with `kwokbench "
                                              "merge`.")] = None,
    emit_job: Annotated[int | None, typer.Option(min=1, max=1000, help="Print a Kubernetes Indexed Job (and a "
                                                 "ConfigMap with the scenario) running this sweep as N shards, "
                                                 "then exit; run nothing here.")] = None,
    image: Annotated[str | None, typer.Option(help="With --emit-job: the container image holding kwokbench and its "
                                              "toolchain.")] = None,
    parallelism: Annotated[int | None, typer.Option(min=1, help="With --emit-job: shards running at once "
                                                    "(default: all).")] = None,
    results_claim: Annotated[str | None, typer.Option(help="With --emit-job: PersistentVolumeClaim mounted at "
                                                      "/results (default: an emptyDir, lost with the pod).")] = None,
    namespace: Annotated[str | None, typer.Option(help="With --emit-job: the Job's namespace.")] = None,
    commit: Annotated[str | None, typer.Option(help=COMMIT_HELP + " Passed on to every shard by --emit-job, whose "
                                               "pods have neither.")] = None,
    ref: Annotated[str | None, typer.Option(help=REF_HELP)] = None,
) -> None:
    """Capacity planning: every cluster size × submit rate; the knee of each size within the SLO."""

    from kwokbench.cli import console
    from kwokbench.cli.job_manifest import sweep_args
    from kwokbench.report import sweep as sweep_report
    from kwokbench.runner import RunOptions
    from kwokbench.scenario import load_scenario
    from kwokbench.shard import parse_shard
    from kwokbench.sweep import SweepOptions, load, run_sweep

    part = parse_shard(shard) if shard is not None else None
    sc = load_scenario(file, set_ or [])
    opts = SweepOptions(nodes=_numbers(nodes, "--nodes", int), qps=_numbers(qps, "--qps", float),
                        slo_p99=_seconds(slo_p99, "--slo-p99"), min_ratio=min_ratio, duration=duration, out=out,
                        variant=variant, stop_early=stop_early, keep_clusters=keep_clusters, shard=part,
                        runs=RunOptions(commit=commit, ref=ref))
    if emit_job is not None:
        _emit_job(file, sc.name, emit_job, image, parallelism, results_claim, namespace, part is not None,
                  sweep_args(nodes, qps, slo_p99, duration, min_ratio, variant, stop_early, set_ or [], commit, ref))
        return
    if image or parallelism or results_claim or namespace:
        raise ScenarioError("--image, --parallelism, --results-claim and --namespace go with --emit-job N")

    _end_cleanly_on_signals()
    path = run_sweep(sc, file, opts, console.RichReporter())
    doc = load(path)
    columns, rows = sweep_report.rows(doc)
    console.table(f"sweep {sc.name} ({doc['variant']})", columns, rows)
    for line in [*doc["sentences"], *sweep_report.trends(doc)]:
        console.out.print(line)
    written = sweep_report.write(doc, path)
    console.out.print(f"stored in {path} ({', '.join(p.name for p in written)})")


@app.command(rich_help_panel=PANEL_RUN)
@handled
def bisect(
    file: Annotated[Path, typer.Argument(help="Scenario YAML file (one scheduler variant is run per release).")],
    kubernetes: Annotated[str, typer.Option(help="The releases: a range FIRST..LAST (every release a change "
                                            "passes through, asked of the Go module proxy) or tags A,B[,C…]; "
                                            "the same tag twice is an A/A.")],
    metric: Annotated[str, typer.Option(help="The figure and the change that counts, as the gate's "
                                        "NAME:MAX_CHANGE (e.g. throughput:10%), or NAME alone: any change of a "
                                        "worst-run count (unscheduled), else 10%.")] = "throughput:10%",
    pre: Annotated[bool, typer.Option(help="With a range: the alpha, beta and rc tags too.")] = False,
    repeat: Annotated[int, typer.Option(min=1, max=50, help="Runs of each release per round, interleaved.")] = 3,
    max_repeat: Annotated[int, typer.Option(min=1, max=100, help="Runs of each release a round may take "
                                            "before it is left undecided.")] = 9,
    variant: Annotated[str | None, typer.Option(help="Scheduler variant (default: the first).")] = None,
    with_ceiling: Annotated[bool, typer.Option("--ceiling", help="Also scheduler_perf's in-process ceiling of "
                                               "each release measured (its own build per release).")] = False,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a field: path=value.")] = None,
    out: Annotated[Path, typer.Option(help="Root folder for run and bisect directories.")] = Path("reports"),
    scrape_interval: Annotated[float, typer.Option(min=0, help="Seconds between /metrics scrapes.")] = 1.0,
    commit: Annotated[str | None, typer.Option(help=COMMIT_HELP)] = None,
) -> None:
    """Which release changed it: a scenario over Kubernetes releases, bisected until two adjacent releases
    differ by more than the metric's allowed change (the gate's test, runs interleaved), with each release's
    build time and, with --ceiling, its in-process ceiling."""

    from kwokbench.bisection import BisectOptions, load, run_bisect, sentence
    from kwokbench.cli import console
    from kwokbench.report import bisect as bisect_report
    from kwokbench.runner import RunOptions
    from kwokbench.scenario import load_scenario

    sc = load_scenario(file, set_ or [])
    opts = BisectOptions(kubernetes=kubernetes, metric=metric, pre=pre, repeat=repeat, max_repeat=max_repeat,
                         variant=variant, ceiling=with_ceiling, out=out,
                         runs=RunOptions(scrape_interval=scrape_interval, commit=commit))

    _end_cleanly_on_signals()
    path = run_bisect(sc, file, opts, console.RichReporter())
    doc = load(path)
    columns, rows = bisect_report.rows(doc)
    console.table(f"bisect {sc.name}: {doc['metric']} over {len(doc['path'])} releases", columns, rows)
    console.out.print(sentence(doc))
    console.out.print(f"stored in {path}")


def _emit_job(file: Path, scenario: str, shards: int, image: str | None, parallelism: int | None,
              results_claim: str | None, namespace: str | None, sharded: bool, args: list[str]) -> None:
    import yaml

    from kwokbench.cli.job_manifest import indexed_job, job_name

    if sharded:
        raise ScenarioError("--emit-job N deals the shards itself; drop --shard")
    if not image:
        raise ScenarioError("--emit-job needs --image IMAGE: a container image holding kwokbench and its toolchain")
    try:
        text = file.read_text()
    except OSError as e:
        raise ScenarioError(f"cannot read scenario {file}: {e.strerror}") from e
    docs = indexed_job(job_name(scenario), image, shards, parallelism or shards, file.name, text, args,
                       results_claim, namespace)
    typer.echo(yaml.safe_dump_all(docs, sort_keys=False), nl=False)


@app.command(rich_help_panel=PANEL_RUN)
@handled
def merge(
    shards: Annotated[list[Path], typer.Argument(help="The shards' folders: the --out folders of `sweep --shard` "
                                                 "(or their sweep directories), or folders holding the runs of "
                                                 "`run --repeat R --shard`.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="New folder for the merged sweep or run group.")],
) -> None:
    """Join shards run on several machines into one sweep (or run group) that report and gate read as one."""
    from kwokbench.cli import console
    from kwokbench.merge import merge as merge_shards

    merged = merge_shards(shards, output)
    for n in merged.notes:
        console.info(f"note: {n}")
    for w in merged.warnings:
        console.warn(w)
    if merged.kind == "sweep":
        from kwokbench.report import sweep as sweep_report

        doc = merged.doc
        columns, rows = sweep_report.rows(doc)
        console.table(f"sweep {doc['scenario']} ({doc['variant']}), merged from {len(doc['shards'])} shards",
                      columns, rows)
        for line in [*doc["sentences"], *sweep_report.trends(doc)]:
            console.out.print(line)
        written = sweep_report.write(doc, merged.path)
        console.out.print(f"stored in {merged.path} ({', '.join(p.name for p in written)})")
        return
    doc = merged.doc
    console.out.print(f"merged {len(doc['cells'])} runs ({doc['repeats']} repeats, shards "
                      f"{', '.join(doc['shards'])}) into {merged.path}: `kwokbench report {merged.path}`")


@app.command(rich_help_panel=PANEL_RUN)
@handled
def ceiling(
    nodes: Annotated[int | None, typer.Option(min=1, help="Cluster size to match.")] = None,
    pods: Annotated[int | None, typer.Option(min=1, help="Pods to match (with --nodes).")] = None,
    scenario: Annotated[Path | None, typer.Option(help="Match this scenario's node and pod counts.")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="With --scenario: override a field.")] = None,
    runs: Annotated[int, typer.Option(min=1, max=20, help="Runs; their spread is reported.")] = 1,
    timeout: Annotated[float, typer.Option(min=10, help="Seconds a run may take before it and its etcd "
                                           "are stopped.")] = 900.0,
    test_case: Annotated[str, typer.Option(help="scheduler_perf's test case: SchedulingBasic (bare pods), "
                                           "SchedulingWithResourceClaimTemplate (a DRA claim per pod: the ceiling "
                                           "of runs with claims), SchedulingWithResourceClaim (shared claims), "
                                           "SteadyStateClusterResourceClaimTemplate (ten claims in flight for a "
                                           "duration, --fill), Partitionable (devices drawing on counter sets, "
                                           "Kubernetes 1.36 on).")
                         ] = "SchedulingBasic",
    fill: Annotated[str | None, typer.Option(help="SteadyStateClusterResourceClaimTemplate's fill level: empty, "
                                             "half or full (the devices allocated before the measurement); "
                                             "default empty.", show_default=False)] = None,
    kubernetes: Annotated[str | None, typer.Option(help="The Kubernetes release whose scheduler_perf runs "
                                                   "(default: the scenario's, else the pinned one).",
                                                   show_default=False)] = None,
) -> None:
    """This host's ceiling: scheduler_perf (the same kube-scheduler with an in-process apiserver and etcd)
    on its workload nearest the size (SchedulingBasic, or a DRA test case); stored per host and Kubernetes
    version, and shown next to every run's throughput."""

    from kwokbench.ceiling import STEADY_DRA_TEST_CASE, measure_ceiling, result_rows, unstable
    from kwokbench.cli import console
    from kwokbench.scenario import load_scenario
    from kwokbench.toolchain import versions

    if (scenario is None) == (nodes is None):
        raise ScenarioError("give --nodes N [--pods M] or --scenario FILE")
    try:
        release = versions.kubernetes_tag(kubernetes) if kubernetes else None
    except ValueError as e:
        raise ScenarioError(f"--kubernetes: {e}") from e
    if scenario is not None:
        if pods is not None:
            raise ScenarioError("--pods goes with --nodes, not with --scenario")
        sc = load_scenario(scenario, set_ or [])
        nodes, pods = sum(g.count for g in sc.cluster.node_groups), sum(w.count for w in sc.workloads)
        if test_case == STEADY_DRA_TEST_CASE:
            pods = None  # a duration, not a count of pods
        release = release or sc.cluster.kubernetes_version
    elif set_:
        raise ScenarioError("--set goes with --scenario")

    _end_cleanly_on_signals()
    assert nodes is not None
    path, doc = measure_ceiling(nodes, pods, runs, timeout, console.RichReporter(), test_case=test_case,
                                 kubernetes=release, fill=fill)
    console.table(f"this host's in-process ceiling for {nodes} nodes" + (f", {pods} pods" if pods else ""),
                  ["", ""], result_rows(doc))
    if warning := unstable(doc):
        console.warn(warning)
    console.out.print(f"stored in {path}")


def _load(paths: list[Path]) -> list[Any]:
    from kwokbench.store import find_runs, load_run

    return [load_run(p) for p in find_runs(paths)]


@app.command(rich_help_panel=PANEL_ANALYSE)
@handled
def analyse(
    runs: Annotated[list[Path], typer.Argument(help="Run directories, or folders holding runs.")],
) -> None:
    """Derive each run's summary.json again from its stored raw files (offline; after analysis code improves)."""
    from kwokbench.cli import console
    from kwokbench.figures.analyse import analyse as analyse_run
    from kwokbench.report.table import summary_rows
    from kwokbench.store import find_runs

    for path in find_runs(runs):
        columns, rows = summary_rows(analyse_run(path))
        console.table(f"{path.name} (re-analysed)", columns, rows)
        console.out.print(f"summary written to {path / 'summary.json'}")


@app.command(rich_help_panel=PANEL_ANALYSE)
@handled
def report(
    runs: Annotated[list[Path] | None, typer.Argument(help="Run directories, or folders holding runs (with "
                                                      "--history: also a history index file, for the folder it "
                                                      "indexes; default reports).", show_default=False)] = None,
    baseline: Annotated[list[Path] | None, typer.Option(help="Baseline run(s) or folder; deltas with "
                                                       "confidence intervals are shown against them.")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder.")] = Path("reports/report"),
    metric: Annotated[list[str] | None, typer.Option(help="Gate metric NAME:MAX_REGRESSION for the "
                                                     "baseline comparison (repeatable); with --history, as "
                                                     "`detect --metric`: NAME:+MIN% or NAME:-MIN%.")] = None,
    history: Annotated[bool, typer.Option("--history", help="Instead: the runs' trend over commits as one "
                                          "interactive HTML file (trend.html), with detect's change points and "
                                          "a two-run comparison.")] = False,
    scenario: Annotated[str | None, typer.Option(help="With --history: the scenario whose history to draw.")
                        ] = None,
    variant: Annotated[str | None, typer.Option(help="With --history: the scheduler variant whose history "
                                                "to draw.")] = None,
    lookback: Annotated[int | None, typer.Option(min=1, help="With --history: only the last N commits.")] = None,
    ack: Annotated[Path | None, typer.Option(help="With --history: detect's ack file (accepted changes are "
                                             "marked acked).")] = None,
    normalise: Annotated[str, typer.Option(help="With --history: as detect's (auto, ceiling or none).")] = "auto",
    index: Annotated[Path | None, typer.Option(help="With --history: the index file (default: "
                                               ".kwokbench-history.duckdb in the folder the runs share).")] = None,
    store: Annotated[str | None, typer.Option(help="With --history: " + STORE_HELP + " Its runs are drawn "
                                              "instead of run directories.")] = None,
) -> None:
    """Charts (PNG), one self-contained HTML file and a Markdown summary from stored runs (offline); with
    --history, the trend of a history instead."""
    from kwokbench.cli import console

    if history:
        _trend(runs or [], output, metric or [], scenario, variant, lookback, ack, normalise, index, store,
               bool(baseline))
        return
    given = [o for o, v in (("--scenario", scenario), ("--variant", variant), ("--lookback", lookback),
                            ("--ack", ack), ("--index", index), ("--store", store)) if v is not None]
    if given or normalise != "auto":
        raise ScenarioError(f"{(given or ['--normalise'])[0]} goes with --history")
    from kwokbench.report.render import write_report

    if not runs:
        raise ScenarioError("report: name the run directories or folders to report on")
    base = _load(baseline or [])
    cands = _load(runs)
    rep = write_report(base + [r for r in cands if r.path not in {b.path for b in base}], output, base or None,
                       metric or None)
    for w in rep.warnings:
        console.warn(w)
    console.out.print(f"report: {rep.html}\nmarkdown: {rep.markdown}\ncharts: {len(rep.charts)} PNG in {output}")
    for line in rep.left_out:
        console.dim(f"chart left out, {line}")


def _history_rows(runs: list[Path], index: Path | None, store: str | None, scenario: str | None,
                  variant: str | None, what: str) -> list[dict[str, Any]]:
    """The history ``detect`` and the trend page read: stored runs through the embedded index, or a store's rows
    — one or the other; the index's warnings (an unreadable run skipped) are printed."""
    from kwokbench.cli import console
    from kwokbench.history.index import LocalIndex, sources
    from kwokbench.history.rows import Filters
    from kwokbench.history.store import Store, open_store

    if store and (runs or index):
        raise ScenarioError(f"{what} either run directories or --store, not both (push runs to the store with "
                            "`kwokbench history RUN_DIRS --store URL`)")
    local = LocalIndex(*sources(runs or [Path("reports")], index))
    source: Store = open_store(store) if store else local
    rows = source.rows(Filters(scenario, variant))
    for w in local.history.warnings if local.history else []:
        console.warn(w)
    return rows


def _trend(runs: list[Path], output: Path, metric: list[str], scenario: str | None, variant: str | None,
           lookback: int | None, ack: Path | None, normalise: str, index: Path | None, store: str | None,
           baseline: bool) -> None:
    from kwokbench.cli import console
    from kwokbench.compare.detect import detect, load_acks
    from kwokbench.report.trend import write_trend

    if baseline:
        raise ScenarioError("--history draws the runs' trend over commits; --baseline goes with a comparison "
                            "report (compare any two runs in the trend's page instead)")
    acks = load_acks(ack) if ack else []
    rows = _history_rows(runs, index, store, scenario, variant, "--history draws")
    result = detect(rows, metric, lookback, normalise, acks)
    path = write_trend(rows, result, output)
    for w in result.warnings:
        console.warn(w)
    changes = [c for s in result.series for c in s.changes]
    console.out.print(f"trend: {path} ({len(rows)} runs, {len(changes)} change point(s), "
                      f"{sum(c.new_regression for c in changes)} new regression(s))")


def _verdicts(title: str, columns: list[str], rows: list[list[str]], notes: list[str], warnings: list[str]) -> None:
    """A verdict table (its second column styled by the verdict), then its notes and warnings."""
    from kwokbench.cli import console

    console.table(title, columns, [[r[0], console.styled(r[1], r[1]), *r[2:]] for r in rows])
    for n in notes:
        console.dim(n)
    for w in warnings:
        console.warn(w)


@app.command("gate", rich_help_panel=PANEL_ANALYSE)
@handled
def gate_cmd(
    baseline: Annotated[list[Path], typer.Option(help="Baseline run(s) or folder (repeatable).")],
    candidate: Annotated[list[Path], typer.Option(help="Candidate run(s) or folder (repeatable).")],
    metric: Annotated[list[str] | None, typer.Option(help="NAME:MAX_REGRESSION, e.g. throughput:10% "
                                                     "(default: the scenario's gates, else throughput:10% and "
                                                     "latency_p99:10%); unscheduled is always gated.")] = None,
    baseline_variant: Annotated[str | None, typer.Option(help="Only the baseline runs of this scheduler "
                                                         "variant (e.g. one variant of an interleaved run).")] = None,
    candidate_variant: Annotated[str | None, typer.Option(help="Only the candidate runs of this scheduler "
                                                          "variant.")] = None,
    github: Annotated[bool, typer.Option(help="In GitHub Actions: append the verdict table to "
                                         "$GITHUB_STEP_SUMMARY, and annotate each regression (error) and "
                                         "inconclusive metric (warning).")] = False,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here.")] = None,
) -> None:
    """Compare candidate runs with baseline runs: exit 0 pass, 1 regression, 3 inconclusive, 2 bad input.
    Both sides holding the same scheduler variants, none chosen: each variant is gated against itself."""
    import os

    from kwokbench.compare.gate import gate
    from kwokbench.report.render import gate_markdown, gate_rows, github_annotations
    from kwokbench.report.render import junit as junit_xml

    base, cand = _load(baseline), _load(candidate)
    result = gate(base, cand, metric or [], baseline_variant, candidate_variant)
    _verdicts("kwokbench gate", *gate_rows(result), result.notes, result.warnings)
    if junit:
        junit.write_text(junit_xml(result))
    if github:
        path = os.environ.get("GITHUB_STEP_SUMMARY")
        if not path:
            raise ScenarioError("--github: GITHUB_STEP_SUMMARY is not set (not running in GitHub Actions?)")
        with open(path, "a") as f:
            f.write(gate_markdown(result))
        for line in github_annotations(result):
            typer.echo(line)
    raise typer.Exit(result.exit_code)



HistoryRuns = Annotated[list[Path] | None, typer.Argument(
    help="Run directories, or folders holding runs, or a history index file for the folder it indexes (default: "
    "reports).", show_default=False)]
"""The runs ``history`` and ``detect`` read."""


@app.command("history", rich_help_panel=PANEL_HISTORY)
@handled
def history_cmd(
    runs: HistoryRuns = None,
    scenario: Annotated[str | None, typer.Option(help="Only runs of this scenario.")] = None,
    variant: Annotated[str | None, typer.Option(help="Only runs of this scheduler variant.")] = None,
    metric: Annotated[list[str] | None, typer.Option(help="Only this figure: a gate metric (throughput, "
                                                     "latency_p99, …) or a dotted summary figure (repeatable; "
                                                     "default: the gate metrics, and every figure in exports).")
                      ] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, csv, json or parquet.")] = "table",
    output: Annotated[Path | None, typer.Option(help="Write the export here (default: stdout; parquet "
                                                "needs it).")] = None,
    index: Annotated[Path | None, typer.Option(help="The index file (default: .kwokbench-history.duckdb in "
                                               "the folder the runs share).")] = None,
    store: Annotated[str | None, typer.Option(help=STORE_HELP + " With RUN_DIRS: their rows are written to it "
                                              "(again: replaced); without: the runs it holds are listed.")] = None,
    location: Annotated[str | None, typer.Option(help=LOCATION_HELP)] = None,
) -> None:
    """Index stored runs (DuckDB, incrementally) and list one row per run: scenario, variant, commit, host,
    ceiling and figures; with --store, push them to a store a team shares, or list what it holds."""
    from kwokbench.cli import console
    from kwokbench.history.index import FORMATS, LocalIndex, export, figure_columns, sources
    from kwokbench.history.rows import Filters
    from kwokbench.history.store import check_location, open_store, push_rows

    if fmt not in FORMATS:
        raise ScenarioError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    check_location(location)
    shared = open_store(store) if store else None
    local = LocalIndex(*sources(runs or [Path("reports")], index))
    if shared and not runs:
        rows = shared.rows(Filters(scenario, variant))
        footer = f"store {shared.where}: {len(rows)} run(s)"
    else:
        rows = local.rows(Filters(scenario, variant))
        hist = local.history
        assert hist is not None
        for w in hist.warnings:
            console.warn(w)
        footer = f"index {hist.index}: {hist.read} run(s) read, {len(hist.rows) - hist.read} unchanged"
        if shared:
            footer += f"; {push_rows(shared, rows, location)} row(s) written to the store {shared.where}"
    if fmt != "table":
        text = export(rows, fmt, output, metric)
        if text is not None:
            typer.echo(text, nl=False)
        else:
            console.info(f"{len(rows)} run(s) written to {output}")
        return
    cols = figure_columns(rows, metric)

    def cell(r: dict[str, Any], c: str) -> str:
        v = r.get(c) if c in r else r["figures"].get(c)
        return "-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)

    table_rows = [[r["run_id"], str(r["scenario"]), str(r["variant"]), str(r["status"]), (r["commit"] or "-")[:10],
                   r["ref"] or "-", r["hostname"] or "-", cell(r, "ceiling_ratio"), *[cell(r, c) for c in cols]]
                  for r in rows]
    columns = ["run", "scenario", "variant", "status", "commit", "ref", "host", "of ceiling", *cols]
    # what a narrow log keeps first: which run and commit, then its figures; where it ran last
    left_out = console.fitted_table(f"kwokbench history ({len(rows)} runs)", columns, table_rows,
                                    ["run", "commit", "scenario", "variant", *cols, "status", "of ceiling", "host",
                                     "ref"])
    if left_out:
        console.dim(f"{len(left_out)} column(s) left out to fit {console.out.width} characters "
                    f"({', '.join(left_out)}): --format csv or --format json gives every column")
    console.dim(footer)


@app.command("detect", rich_help_panel=PANEL_HISTORY)
@handled
def detect_cmd(
    runs: HistoryRuns = None,
    metric: Annotated[list[str] | None, typer.Option(help="NAME:+MIN% (a rise is a regression) or NAME:-MIN% "
                                                     "(a drop is), MIN the smallest change reported, e.g. "
                                                     "throughput:-10% (default: throughput:-10% and "
                                                     "latency_p99:+40%).")] = None,
    scenario: Annotated[str | None, typer.Option(help="The scenario whose history to read.")] = None,
    variant: Annotated[str | None, typer.Option(help="The scheduler variant whose history to read.")] = None,
    lookback: Annotated[int | None, typer.Option(min=1, help="Only the last N commits.")] = None,
    ack: Annotated[Path | None, typer.Option(help="YAML list of accepted changes {metric, commit, reason}: "
                                             "reported, no longer failing.")] = None,
    normalise: Annotated[str, typer.Option(help="auto (by the host's ceiling when runs come from several "
                                           "hosts), ceiling or none.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    index: Annotated[Path | None, typer.Option(help="The index file (default: .kwokbench-history.duckdb in "
                                               "the folder the runs share).")] = None,
    store: Annotated[str | None, typer.Option(help=STORE_HELP + " Its runs are read instead of run "
                                              "directories (push those with `history RUN_DIRS --store`).")] = None,
) -> None:
    """Change points over stored runs in commit order (E-divisive means): exit 0 none new, 1 new regression,
    3 not enough history, 2 bad input."""
    from kwokbench.compare.detect import detect, load_acks
    from kwokbench.report.history import detect_json, detect_rows

    acks = load_acks(ack) if ack else []
    result = detect(_history_rows(runs or [], index, store, scenario, variant, "detect reads"), metric or [], lookback,
                    normalise, acks)
    if as_json:
        typer.echo(detect_json(result))
        raise typer.Exit(result.exit_code)
    _verdicts("kwokbench detect", *detect_rows(result), result.notes, result.warnings)
    raise typer.Exit(result.exit_code)
