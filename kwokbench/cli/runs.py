"""The Run panel: ``validate``, ``schema``, ``run``, ``sweep``, ``bisect``, ``merge``, ``ceiling``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kwokbench.cli.app import (
    COMMIT_HELP,
    LOCATION_HELP,
    PANEL_RUN,
    REF_HELP,
    STORE_HELP,
    app,
    handled,
)
from kwokbench.errors import ScenarioError

# ---- scenarios and runs ---------------------------------------------------------------------------


@app.command(rich_help_panel=PANEL_RUN)
@handled
def validate(
    file: Annotated[Path, typer.Argument(help="Scenario YAML file.")],
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a field: path=value.")] = None,
    duet_with: Annotated[Path | None, typer.Option(help="Also check the duets `run --duet-with` would run "
                                                   "against this file.")] = None,
    variant: Annotated[list[str] | None, typer.Option(help="With --duet-with: only this variant "
                                                      "(repeatable).")] = None,
) -> None:
    """Check a scenario file (errors name the YAML line and field path) and its templates."""
    from kwokbench.cli import console
    from kwokbench.plan import check_scenario
    from kwokbench.scenario import load_scenario

    sc = load_scenario(file, set_ or [])
    check_scenario(sc, file.parent)
    if duet_with is not None:
        duets = _duets(file, sc, duet_with, variant or [], set_ or [])
        console.info(f"{file}: duets against {duet_with}: {', '.join(v for v, _ in duets)}")
    elif variant:
        raise ScenarioError("--variant goes with --duet-with here")
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


def _duets(file: Path, sc: Any, other_file: Path, variants: list[str], set_: list[str]) -> list[tuple[str, Any]]:
    """``run --duet-with``: for each chosen variant of ``sc`` (all by default), the duet of that variant as
    ``other_file`` defines it (side ``base``) against ``sc``'s (side ``head``), each checked before anything runs."""
    from kwokbench.plan import check_scenario
    from kwokbench.scenario import duet, load_scenario

    if sc.duet or sc.concurrent_schedulers:
        raise ScenarioError("--duet-with: this scenario already runs its variants together (duet or "
                            "concurrent_schedulers); --duet-with makes a duet of each variant against another file")
    other = load_scenario(other_file, set_)
    out = [(v, duet.against(sc, file.parent, other, other_file.parent, v, str(other_file)))
           for v in variants or [v.name for v in sc.schedulers]]
    for _, merged in out:
        check_scenario(merged, file.parent)
    return out


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
    first_repeat: Annotated[int, typer.Option(min=0, max=10000, help="Number the repeats from this one: runs that "
                                              "add pairs to earlier ones go on alternating which variant starts "
                                              "first (and a duet's sides go on swapping).")] = 0,
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
                                       "on one control plane, each on its own identical node pool, or, when they "
                                       "differ in their Kubernetes release, on two clusters at once (the "
                                       "scenario's `duet: true`).")] = False,
    duet_with: Annotated[Path | None, typer.Option(help="Run each variant (or each --variant) as a duet against "
                                                   "the same variant of this scenario file (e.g. a pull "
                                                   "request's base checkout): side `base` as that file defines "
                                                   "it, side `head` as FILE does, their relative paths each in "
                                                   "its own file's folder; the cluster and workload are FILE's. "
                                                   "Gate the runs with --baseline and --candidate both the "
                                                   "output folder.")] = None,
) -> None:
    """Run a scenario: cluster up, submit at the target rate, record pod timelines, store, summarise."""
    import dataclasses

    from kwokbench.cli import console
    from kwokbench.scenario import load_scenario
    from kwokbench.shard import parse_shard

    part = parse_shard(shard) if shard is not None else None
    if duet and duet_with is not None:
        raise ScenarioError("--duet-with makes the duets itself; drop --duet")
    sc = load_scenario(file, [*(set_ or []), *(["duet=true"] if duet else [])])
    duets = _duets(file, sc, duet_with, variant or [], set_ or []) if duet_with is not None else []
    # the run's own modules (pandas, pyarrow, aiohttp: about a second) only once the scenario is known good
    from kwokbench.measure.profile import components
    from kwokbench.report.table import summary_rows
    from kwokbench.runner import RunOptions, run_scenario

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
                      first_repeat=first_repeat,
                      profile=components(profile or []), shard=part,
                      commit=commit, ref=ref, on_stored=on_stored)
    if duets:
        results = [r for v, merged in duets
                   for r in run_scenario(merged, file, dataclasses.replace(opts, variants=[], duet_of=v), rep)]
    else:
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
    budget_minutes: Annotated[float | None, typer.Option(help="Wall time the search may take: no batch of runs "
                                                         "or round is begun that would end beyond it (the first "
                                                         "round always runs); what it stops reads undecided, "
                                                         "saying so. Default: --max-repeat alone.")] = None,
    variant: Annotated[str | None, typer.Option(help="Scheduler variant (default: the first).")] = None,
    with_ceiling: Annotated[bool, typer.Option("--ceiling", help="Also scheduler_perf's in-process ceiling of "
                                               "each release measured (its own build per release).")] = False,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a field: path=value.")] = None,
    out: Annotated[Path, typer.Option(help="Root folder for run and bisect directories.")] = Path("reports"),
    scrape_interval: Annotated[float, typer.Option(min=0, help="Seconds between /metrics scrapes.")] = 1.0,
    commit: Annotated[str | None, typer.Option(help=COMMIT_HELP)] = None,
    duet: Annotated[bool, typer.Option("--duet", help="Run each round's releases at the same time, each on its "
                                       "own cluster (two at once, three in a round with the middle release), "
                                       "every phase started together, instead of one after the other: what slows "
                                       "the host slows every release of the round.")] = False,
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
                         budget_minutes=budget_minutes, variant=variant, ceiling=with_ceiling, out=out, duet=duet,
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
