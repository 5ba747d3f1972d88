"""The FGD paper's experiment on a real control plane (issue 32): the Alibaba GPU trace v2023 replayed by
`scenarios/alibaba-gpu-2023.yaml` (default pod list on its 1523 nodes, resampled to 1.3x the GPU capacity, pods in
trace order at a fixed rate, no lifetimes), one run per variant through the real CLI, set beside the published
results of the paper's simulator (`../shared/traces/fgd-expected/analysis_allo_discrete.csv`: the mean over its
seeds 42-51 of the GPU allocation ratio at each % of arrived workload, for its Random, BestFit and FGD policies).

Printed: per variant, pods bound and left pending, GPU allocation (% of capacity) at 100% of arrived workload,
once all has arrived (~130%: resampling stops just below 1.3x) and at the end, mean GPU fragmentation, created →
bound p99 per pod class, the run's length; where the CPU-only pods went and how many free GPUs sat on nodes
whose CPU was full; then the simulator's rows; and the allocation-against-arrived curve of every variant every 10%.

    .venv/bin/python benchmarks/bench_traces.py                          # run every variant (3-6 min each here)
    .venv/bin/python benchmarks/bench_traces.py --variant gpu-binpack    # one of them
    .venv/bin/python benchmarks/bench_traces.py --runs DIR               # only print, from runs already stored in DIR
    .venv/bin/python benchmarks/bench_traces.py --policies               # the paper's six policies as plugins/gpushare
    .venv/bin/python benchmarks/bench_traces.py --policies --seeds 42,43,44   # each seed's list, by the simulator's
    .venv/bin/python benchmarks/bench_traces.py --runs DIR --data OUT     # also keep the rows (docs/results/data/)
    .venv/bin/python benchmarks/bench_traces.py --timed  # the whole trace with its own times (~11 min a variant)
    .venv/bin/python benchmarks/bench_traces.py --timed --slice 300:60    # its first 300 pods compressed into a minute
    .venv/bin/python benchmarks/bench_traces.py --dra --variant least-allocated   # fitted per GPU through DRA (~14 min)
    .venv/bin/python benchmarks/bench_traces.py --lifetimes --data OUT  # no run: the timed replay's lifetimes as scaled

``--data OUT`` keeps every run's row (its curve every 10% of arrived workload) by variant, the simulator's means
beside them, and the command, commit, day and host (benchmarks/stored.py's ``provenance``):
docs/results/traces.md renders its tables with :func:`markdown`, :func:`curve_table` and :func:`cpu_table`, and
quotes :func:`cell`.

With --policies it runs `scenarios/alibaba-gpu-2023-policies.yaml` instead (the 1213 GPU nodes, the six policies of
plugins/gpushare, FGD again with kube-scheduler's random tie-break) and prints, from the GPU each pod was given,
the paper's fragmentation measure at the end (% of the GPU capacity, against the trace's typical pods) beside the
simulator's at 130%. With --seeds it runs the scenario once per seed (its pod list the simulator's for that seed,
`trace.shuffle: simulator`) and sets each policy and seed beside the simulator's same seed, then the mean over the
seeds and the ranking.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path
from statistics import fmean
from typing import Any

import pandas as pd
from stored import at as value_at
from stored import here, provenance, ranged, run_scenario, write  # a sibling: benchmarks/ is on a script's path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios/alibaba-gpu-2023.yaml"
TIMED_SCENARIO = REPO / "scenarios/alibaba-gpu-2023-timed.yaml"
POLICIES_SCENARIO = REPO / "scenarios/alibaba-gpu-2023-policies.yaml"
TRACES = Path(os.environ.get("KWOKBENCH_TRACES") or REPO.parent / "shared" / "traces")
TRACE_FILES = {
    # what these benchmarks read under $KWOKBENCH_TRACES, by sha256 (docs/guides/traces.md, "Where the trace files
    # come from": upstream, commit, layout): a different file gives different figures, so it is refused
    "alibaba-gpu-2023/openb_node_list_all_node.csv": "5a85c2af79c66a1efff8bbcbda430400aae56d8431370d738480967e1a9c6b15",
    "alibaba-gpu-2023/openb_node_list_gpu_node.csv": "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5",
    "alibaba-gpu-2023/openb_pod_list_default.csv": "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8",
    "fgd-expected/analysis_allo_discrete.csv": "e00aff5923a52d53e47c16ec9d19190de4e788c15334865a77bd46e1bd006ea1",
    "fgd-expected/analysis_frag_discrete.csv": "0d9181864ef9adb2169f232124c6af767579fe2a3c08f940419b4989420c8ce2",
}
GUIDE = "docs/guides/traces.md#where-the-trace-files-come-from"


def require_traces(names: tuple[str, ...] = tuple(TRACE_FILES)) -> None:
    """Stop with one line (exit 2) when a trace file these benchmarks read is missing or not the pinned one."""
    import hashlib

    for name in names:
        path = TRACES / name
        if not path.is_file():
            problem = (f"{path} is not here: the trace files are not shipped; put them in a folder and point "
                       f"KWOKBENCH_TRACES at it")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != TRACE_FILES[name]:
            problem = f"{path}: sha256 is not the pinned {TRACE_FILES[name][:16]}…: another copy gives other figures"
        else:
            continue
        print(f"error: {problem} ({GUIDE})", file=sys.stderr)
        raise SystemExit(2)


POLICIES = ("01-Random", "05-BestFit", "06-FGD")
ALL_POLICIES = ("01-Random", "02-DotProd", "03-GpuClustering", "04-GpuPacking", "05-BestFit", "06-FGD")


def at(curve: list[dict[str, float]], percent: float) -> float | None:
    return next((p["allocated"] for p in curve if p["arrived"] >= percent), None)


def where_cpu_pods_went(run: Path) -> dict[str, float]:
    """From the stored pods and nodes: the share of bound CPU-only pods that landed on CPU-only nodes, the CPU used
    on CPU-only and on GPU nodes, and the free GPUs left on nodes with less than 10% of their CPU free (GPUs no pod
    can use for want of CPU, whatever its GPU request)."""
    pods, nodes = pd.read_parquet(run / "pods.parquet"), pd.read_parquet(run / "nodes.parquet").set_index("name")
    bound = pods[pods["node"].fillna("") != ""]
    used = bound.groupby("node").agg(u_cpu=("cpu_m", "sum"), u_gpus=("gpus", "sum"), u_milli=("gpu_milli", "sum"))
    n = nodes.join(used).fillna(0)
    gpu_node = n["gpus"] > 0
    cpu_only = bound[(bound["gpus"] == 0) & (bound["gpu_milli"] == 0)]
    free_gpus = (n["gpus"] - n["u_gpus"] - n["u_milli"] / 1000).clip(lower=0)
    cpu_full = n["u_cpu"] / n["cpu_m"] > 0.9
    return {"cpu_pods_on_cpu_nodes": 100 * float(cpu_only["node"].isin(n.index[~gpu_node]).mean()),
            "cpu_used_cpu_nodes": 100 * float(n["u_cpu"][~gpu_node].sum() / n["cpu_m"][~gpu_node].sum()),
            "cpu_used_gpu_nodes": 100 * float(n["u_cpu"][gpu_node].sum() / n["cpu_m"][gpu_node].sum()),
            "free_gpus": float(free_gpus.sum()), "free_gpus_cpu_full": float(free_gpus[cpu_full].sum())}


def per_gpu_fragmentation(run: Path) -> float | None:
    """The paper's fragmentation at the end of the run, from the GPU each pod was given (pods.parquet's gpu_index):
    each GPU node's F_n(M) against the trace's typical pods, summed, as % of the GPU capacity. None without
    recorded choices."""
    from kwokbench.figures.overbooking import held
    from kwokbench.trace.alibaba import read_openb_pods
    from kwokbench.trace.fgd import fragmentation, typical_pods

    pods, nodes = pd.read_parquet(run / "pods.parquet"), pd.read_parquet(run / "nodes.parquet")
    if "gpu_index" not in pods or not (pods["gpu_index"].fillna("") != "").any():
        return None
    workload = typical_pods(read_openb_pods(TRACES / "alibaba-gpu-2023" / "openb_pod_list_default.csv"))
    ledger, _, _ = held(pods, nodes)
    live = pods[(pods["node"].fillna("") != "") & ~pods["deleted"]]
    cpu_used = live.groupby("node")["cpu_m"].sum()
    total = 0.0
    for name, cpu, gpus, model in zip(nodes["name"], nodes["cpu_m"], nodes["gpus"], nodes["gpu_model"], strict=True):
        if gpus:
            free = [1000.0 - ledger.get((name, i), 0.0) for i in range(int(gpus))]
            total += fragmentation(float(cpu) - float(cpu_used.get(name, 0.0)), free, str(model or ""), workload)
    return 100 * total / (1000 * float(nodes["gpus"].sum()))


CLAIM_FIGURES = ("claims", "allocated", "never_allocated", "devices_allocated", "allocations", "shared_allocations",
                 "devices_given_twice", "shared_peak_milli", "bound_unallocated", "reallocated")
"""What a run's row keeps of its summary's ``claims`` section (a ``--dra`` run's: its claims, the GPUs they were
given, and the checks that no GPU was given past its 1000 milli and no pod bound without its claim)."""


def rows(root: Path) -> list[dict[str, Any]]:
    out = []
    for d in sorted(root.rglob("summary.json")):
        s, meta = json.loads(d.read_text()), json.loads((d.parent / "meta.json").read_text())
        seed = next((int(p.name[5:]) for p in d.parents if p.name.startswith("seed-")), None)
        a = s.get("allocation") or {}
        curve = a.get("gpu_allocated_vs_arrived") or []
        started, ended = meta.get("started_at"), meta.get("ended_at")
        timed_out = any(p.get("timed_out") for p in meta.get("phases") or [])
        out.append({"variant": meta["variant"]["name"] + (" (timed out)" if timed_out else ""), "seed": seed,
                    "bound": s.get("pods_scheduled"),
                    "pending": (a.get("pending") or {}).get("final"),
                    # inflation stops just below 1.3x: the last point is at 125%, allocation then no longer moves
                    "at100": at(curve, 100), "at130": curve[-1]["allocated"] if curve else None,
                    "final": 100 * ((a.get("final") or {}).get("gpu") or 0),
                    "frag": 100 * ((a.get("gpu_fragmentation") or {}).get("mean_share") or 0),
                    "p99": {c: v.get("p99") for c, v in (a.get("latency_by_class") or {}).items()},
                    "pending_peak": (a.get("pending") or {}).get("peak"),
                    "alloc_peak": 100 * ((a.get("peak") or {}).get("gpu") or 0),
                    "alloc_mean": 100 * ((a.get("mean") or {}).get("gpu") or 0),
                    "frag_peak_gpus": (a.get("gpu_fragmentation") or {}).get("peak_gpus"),
                    "frag_mean_gpus": (a.get("gpu_fragmentation") or {}).get("mean_gpus"),
                    "deleted": a.get("deleted"),
                    "lat_p50": ((s.get("latency") or {}).get("created_to_scheduled") or {}).get("p50"),
                    "lat_p99": ((s.get("latency") or {}).get("created_to_scheduled") or {}).get("p99"),
                    "p50": {c: v.get("p50") for c, v in (a.get("latency_by_class") or {}).items()},
                    "trace": ((meta.get("phases") or [{}])[0].get("trace")),
                    "sent": (s.get("submit") or [{}])[0].get("sent_qps"),
                    "throughput": (s.get("throughput") or {}).get("average"),
                    "limited_by": (s.get("limited_by") or {}).get("verdict"),
                    "sched_ms": 1000 * ((s.get("scheduler") or {}).get("cpu_seconds_per_pod") or 0) or None,
                    "offered": (s.get("submit") or [{}])[0].get("offered_qps"),
                    "accepted": (s.get("submit") or [{}])[0].get("accepted_qps"),
                    "seconds": (pd.Timestamp(ended) - pd.Timestamp(started)).total_seconds()
                    if started and ended else None,
                    "gpu_frag": per_gpu_fragmentation(d.parent),
                    "claims": {k: v for k, v in (s.get("claims") or {}).items()
                               if k in CLAIM_FIGURES} or None,
                    "curve": curve, **where_cpu_pods_went(d.parent)})
    return out


PLUGIN_POLICY = {"random": "01-Random", "dot-product": "02-DotProd", "gpu-clustering": "03-GpuClustering",
                 "gpu-packing": "04-GpuPacking", "bestfit": "05-BestFit", "fgd": "06-FGD"}
"""The policies scenario's variants by the simulator's policy names."""


def simulator_per_seed() -> pd.DataFrame:
    """The simulator's figures per policy and seed on the default pod list: allocation at 100% and 130% arrived,
    fragmentation at 130% (% of capacity)."""
    d = pd.read_csv(TRACES / "fgd-expected" / "analysis_allo_discrete.csv")
    f = pd.read_csv(TRACES / "fgd-expected" / "analysis_frag_discrete.csv")
    keep = ["sc_policy", "seed"]
    d = d[d.workload == "openb_pod_list_default"][[*keep, "100", "130"]]
    f = f[f.workload == "openb_pod_list_default"][[*keep, "130"]].rename(columns={"130": "frag130"})
    return d.merge(f, on=keep).set_index(keep)


def by_seed(found: list[dict[str, Any]]) -> None:
    """Each policy and seed beside the simulator's same seed; then the means over these seeds and the ranking."""
    sim = simulator_per_seed()
    table = []
    for r in found:
        policy = PLUGIN_POLICY.get(r["variant"])
        if policy is None or r["seed"] is None or (policy, r["seed"]) not in sim.index:
            continue
        v = sim.loc[(policy, r["seed"])]
        table.append({"policy": policy, "seed": r["seed"], "at100": r["at100"], "sim100": v["100"],
                      "at130": r["at130"], "sim130": v["130"], "frag": r["gpu_frag"], "sim_frag": v["frag130"]})
    if not table:
        return
    t = pd.DataFrame(table).sort_values(["policy", "seed"])
    print("\nper seed, beside the simulator's same seed (GPU allocation % at 100% / 130% arrived, fragmentation % "
          "at the end / at 130%):")
    for _, x in t.iterrows():
        print(f"  {x['policy']:<16} {x['seed']:>3}  {x['at100'] or 0:5.1f} ({x['sim100']:.1f})  {x['at130'] or 0:5.1f} "
              f"({x['sim130']:.1f}, {x['at130'] - x['sim130']:+.1f})  {x['frag'] or 0:5.2f} ({x['sim_frag']:.2f})")
    m = t.groupby("policy")[["at100", "sim100", "at130", "sim130", "frag", "sim_frag"]].agg(["mean", "min", "max"])
    print(f"\nmean over seeds {sorted(set(t['seed']))} (min-max), beside the simulator's on the same seeds:")
    for policy, x in m.iterrows():
        print(f"  {policy:<16} @130 {x[('at130', 'mean')]:.1f} ({x[('at130', 'min')]:.1f}-{x[('at130', 'max')]:.1f})"
              f" sim {x[('sim130', 'mean')]:.1f}, {x[('at130', 'mean')] - x[('sim130', 'mean')]:+.1f};  @100 "
              f"{x[('at100', 'mean')]:.1f} sim {x[('sim100', 'mean')]:.1f};  frag {x[('frag', 'mean')]:.2f} "
              f"sim {x[('sim_frag', 'mean')]:.2f}")
    ours = m[("at130", "mean")].sort_values(ascending=False).index.tolist()
    theirs = m[("sim130", "mean")].sort_values(ascending=False).index.tolist()
    print(f"\nranking at 130%, best first: here {', '.join(ours)}; simulator {', '.join(theirs)}"
          f"{' (the same)' if ours == theirs else ''}")


def simulator(policies: tuple[str, ...] = POLICIES) -> pd.DataFrame:
    """The simulator's means over its seeds on the default pod list: GPU allocation at 100% and 130% arrived, and
    fragmentation (% of capacity) at 130%."""
    d = pd.read_csv(TRACES / "fgd-expected" / "analysis_allo_discrete.csv")
    d = d[(d.workload == "openb_pod_list_default") & d.sc_policy.isin(policies)]
    out = d.groupby("sc_policy")[["100", "130"]].mean()
    f = pd.read_csv(TRACES / "fgd-expected" / "analysis_frag_discrete.csv")
    f = f[(f.workload == "openb_pod_list_default") & f.sc_policy.isin(policies)]
    return out.join(f.groupby("sc_policy")[["130"]].mean().rename(columns={"130": "frag130"}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", action="append", default=[], help="only these variants (default: all)")
    ap.add_argument("--runs", type=Path, help="print from runs stored here instead of running")
    ap.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--policies", action="store_true", help="the paper's policies as plugins/gpushare "
                                                            "(scenarios/alibaba-gpu-2023-policies.yaml)")
    ap.add_argument("--seeds", help="with --policies: run once per seed (comma-separated), the simulator's pod "
                                    "list of each")
    ap.add_argument("--timed", action="store_true", help="the whole trace with its own arrival times and lifetimes "
                                                         "(scenarios/alibaba-gpu-2023-timed.yaml)")
    ap.add_argument("--dra", action="store_true", help="the experiment fitted per GPU: each GPU a DRA device, each "
                                                       "GPU pod's share a claim on one (kube-controller-manager "
                                                       "makes the claims)")
    ap.add_argument("--slice", metavar="PODS:SECONDS", help="with --timed: only the trace's first PODS pods, their "
                                                            "arrivals and lifetimes compressed into SECONDS")
    ap.add_argument("--lifetimes", action="store_true", help="no run: the pods' lifetimes in the timed replay "
                                                             "(scenarios/alibaba-gpu-2023-timed.yaml), as it scales "
                                                             "them")
    ap.add_argument("--data", type=Path, metavar="OUT", help="also keep the runs' rows (docs/results/data/)")
    args = ap.parse_args()
    if args.lifetimes:
        require_traces(("alibaba-gpu-2023/openb_node_list_all_node.csv",
                        "alibaba-gpu-2023/openb_pod_list_default.csv"))
        doc = {**here(f"the pods' lifetimes as scenarios/{TIMED_SCENARIO.name} scales them (kwok deletes each that "
                      "long after it starts Running), read from the trace, no run", "bench_traces.py"),
               "runs": {TIMED_SCENARIO.stem: lifetimes(TIMED_SCENARIO)}}
        print(", ".join(f"{k} {v:.3g}" for k, v in doc["runs"][TIMED_SCENARIO.stem].items()))
        if args.data:
            write(args.data, doc)
        return
    try:
        form = form_sets(args.dra, args.slice, args.policies, args.timed)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    require_traces()
    root = args.runs
    if root is None:
        root = args.out or Path(tempfile.mkdtemp(prefix="bench-traces-"))
        seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else [None]
        for seed in seeds:
            where = root / f"seed-{seed}" if seed is not None else root
            scenario = POLICIES_SCENARIO if args.policies else TIMED_SCENARIO if args.timed else SCENARIO
            run_scenario(scenario, where, args.variant,
                         sets=[*form, *([f"workloads.0.trace.seed={seed}"] if seed is not None else [])])
    found = rows(root)
    if args.data:
        args.data.parent.mkdir(parents=True, exist_ok=True)
        form_options = " --dra" * args.dra + (f" --slice {args.slice}" if args.slice else "")
        doc = data(root, found, args.policies, args.timed, form_options)
        args.data.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"kept in {args.data}")
    print("variant            bound  pending  GPU alloc @100%  @130%  end    frag(mean)  offered/accepted  "
          "p99 by class (s)                         run")
    for r in found:
        p99 = ", ".join(f"{c} {v:.1f}" for c, v in r["p99"].items() if v is not None)
        print(f"{r['variant']:<18} {r['bound']:>6} {r['pending'] or 0:>8.0f}  {r['at100'] or 0:>14.1f}  "
              f"{r['at130'] or 0:>5.1f}  {r['final']:>5.1f}  {r['frag']:>9.1f}%  "
              f"{r['offered'] or 0:>6.1f}/{r['accepted'] or 0:<6.1f}/s  {p99:<40} {r['seconds'] or 0:.0f}s")
    print("\nwhere the CPU-only pods went, and the GPUs CPU left stranded (at the end):")
    for r in found:
        print(f"  {r['variant']:<18} CPU-only pods on CPU-only nodes {r['cpu_pods_on_cpu_nodes']:.0f}%; CPU used on "
              f"CPU-only nodes {r['cpu_used_cpu_nodes']:.1f}%, on GPU nodes {r['cpu_used_gpu_nodes']:.1f}%; free GPUs "
              f"{r['free_gpus']:.0f}, {r['free_gpus_cpu_full']:.0f} of them on nodes with < 10% CPU free")
    if any(r["gpu_frag"] is not None for r in found):
        print("\nper GPU, from the GPU each pod was given: the paper's fragmentation at the end (% of capacity):")
        for r in found:
            if r["gpu_frag"] is not None:
                print(f"  {r['variant']:<18} {r['gpu_frag']:.2f}")
    if (TRACES / "fgd-expected").is_dir():
        print("\nthe paper's simulator (mean of seeds 42-51: GPU allocation % at 100% / 130% arrived, "
              "fragmentation % at 130%):")
        for policy, v in simulator(ALL_POLICIES if args.policies else POLICIES).iterrows():
            print(f"  {policy:<16} {v['100']:.1f}  {v['130']:.1f}  {v['frag130']:.2f}")
    if any(r["seed"] is not None for r in found) and (TRACES / "fgd-expected").is_dir():
        by_seed(found)
    print("\nGPU allocation (% of capacity) against arrived workload, every 10%:")
    for r in found:
        print(f"  {r['variant']:<18} " + " ".join(f"{p['arrived']:.0f}:{p['allocated']:.1f}"
                                                  for p in r["curve"] if p["arrived"] % 10 == 0))



DRA_SETS = ("cluster.node_groups.0.from_trace.gpus=dra", "workloads.0.trace.gpus=dra",
            "cluster.controller_manager=true")
"""``--dra``: the GPUs as DRA devices of 1000 milli and each GPU pod's share a claim on one GPU, as the simulator
places it (docs/guides/traces.md, "Per GPU"); kube-controller-manager makes each pod's claim from its template."""


def lifetimes(scenario: Path) -> dict[str, float]:
    """The lifetimes (seconds once Running) a replay of ``scenario`` gives its trace's pods, scaled as it scales
    them: how many pods have one, and their median, p90, p99 and longest."""
    import numpy as np

    from kwokbench.scenario import load_scenario

    sc = load_scenario(scenario)
    xs = np.array([p.lifetime_seconds for w in sc.workloads if w.trace is not None for p in w.trace_pods
                   if p.lifetime_seconds is not None], dtype=np.float64)
    if not len(xs):
        raise ValueError(f"{scenario.name}: no pod of its trace has a lifetime")
    p50, p90, p99 = np.percentile(xs, [50, 90, 99])
    return {"pods": float(len(xs)), "p50": float(p50), "p90": float(p90), "p99": float(p99), "max": float(xs.max())}


def lifetime(doc: dict[str, Any], key: str, digits: int = 2) -> str:
    """One figure of ``--lifetimes``' file (its one scenario's): ``p50``, ``p90``, ``p99``, ``max`` (seconds) or
    ``pods``."""
    [figures] = doc["runs"].values()
    return f"{figures[key]:.{digits}f}"


def form_sets(dra: bool, slice_: str | None, policies: bool, timed: bool) -> list[str]:
    """The ``--set`` overrides of ``--dra`` and ``--slice PODS:SECONDS``; ValueError, in one line, for a form the
    chosen scenario does not take or a slice that is not two positive whole numbers."""
    sets: list[str] = []
    if dra:
        if policies or timed:
            raise ValueError("--dra is the experiment's per-GPU form (the default scenario): not with --policies "
                             "or --timed")
        sets += DRA_SETS
    if slice_ is not None:
        if not timed:
            raise ValueError("--slice cuts the timed trace: give --timed too")
        pods, _, seconds = slice_.partition(":")
        if not (pods.isdigit() and seconds.isdigit() and int(pods) > 0 and int(seconds) > 0):
            raise ValueError(f"--slice {slice_}: give PODS:SECONDS, two positive whole numbers (e.g. 300:60)")
        sets += [f"workloads.0.trace.limit={int(pods)}", f"workloads.0.trace.duration_seconds={int(seconds)}"]
    return sets


def data(root: Path, found: list[dict[str, Any]], policies: bool, timed: bool = False,
         form: str = "") -> dict[str, Any]:
    """``--data``'s file: each run's row by variant (its curve every 10%), the simulator's means, the provenance
    (``form``: the options of :func:`form_sets` the runs were made with, as the command gives them)."""
    import yaml

    scenario = POLICIES_SCENARIO if policies else TIMED_SCENARIO if timed else SCENARIO
    spec = yaml.safe_load(scenario.read_text())
    order = [v["name"] for v in spec.get("schedulers") or spec.get("variants") or []]
    runs: dict[str, list[dict[str, Any]]] = {}
    for r in found:
        runs.setdefault(r["variant"], []).append({**r, "curve": [p for p in r["curve"] if p["arrived"] % 10 == 0]})
    # a run per seed (--seeds, each seed's runs in its own folder, found in path order): the seeds are the
    # command's, not repeats
    seeds = [r["seed"] for r in next(iter(runs.values())) if r["seed"] is not None]
    options = (" --policies" if policies else " --timed" if timed else "") + form
    if seeds:
        options += f" --seeds {','.join(str(s) for s in seeds)}"
    doc = provenance(root, runs, scenario, "bench_traces.py", options, order, repeat=1 if seeds else None)
    if (TRACES / "fgd-expected").is_dir():
        sim = simulator(ALL_POLICIES if policies else POLICIES)
        doc["simulator"] = {str(k): {c: float(v[c]) for c in ("100", "130", "frag130")} for k, v in sim.iterrows()}
        if seeds:  # the simulator's own figures for the seeds run, so that a page renders them without its files
            per = simulator_per_seed()
            doc["simulator_seeds"] = {
                str(policy): {str(seed): {c: float(per.loc[(policy, seed)][c]) for c in ("100", "130", "frag130")}
                              for seed in sorted(set(seeds)) if (policy, seed) in per.index}
                for policy in ALL_POLICIES}
    return doc


# What docs/results/traces.md renders from --data's file (docs/figures.py: bench_table, bench).

LABELS = {
    "least-allocated": "**kube-scheduler, LeastAllocated** (stock)",
    "gpu-binpack": "**kube-scheduler, MostAllocated on GPUs** (bin packing)",
    "gpu-rtcr": "**kube-scheduler, RequestedToCapacityRatio on GPUs**",
    "yunikorn": "Apache YuniKorn, binpacking node order: **cut off**, not its result (the 30 s settle rule ended the "
                "run while it still worked through its asks, see below)",
}
SHORT = {"least-allocated": "LeastAllocated", "gpu-binpack": "MostAllocated on GPUs",
         "gpu-rtcr": "RequestedToCapacityRatio on GPUs",
         "yunikorn": "YuniKorn, binpacking (cut off by the settle rule)"}
CUT_OFF = {"yunikorn"}
"""Variants the settle rule ends while they still place pods (docs/results/traces.md says why): their figures are
where they stood, marked "when cut", never their result."""
SIMULATOR = {"01-Random": "Random", "05-BestFit": "BestFit", "06-FGD": "FGD"}


def _stored(name: str) -> dict[str, Any]:
    """Another stored data file of these benchmarks (``docs/results/data/<name>.json``), that a table sets beside
    the one it renders."""
    return dict(json.loads((REPO / "docs" / "results" / "data" / f"{name}.json").read_text()))


def _one(doc: dict[str, Any], variant: str) -> dict[str, Any]:
    rs = doc["runs"][variant]
    if len(rs) != 1:
        raise ValueError(f"{variant}: {len(rs)} runs; the trace tables show one run a variant")
    return dict(rs[0])


def cell(doc: dict[str, Any], variant: str, key: str, digits: int = 1) -> str:
    """One figure of a variant's run (``at100``, ``at130``, ``frag``, ``bound``, ``free_gpus``, ``p99.one-gpu``,
    ``throughput``, ``pending_peak``, ``sched_ms``)."""
    r = value_at(_one(doc, variant), key)
    return f"{r:.{digits}f}" if isinstance(r, float) else str(r)


def accepted(doc: dict[str, Any], digits: int = 1) -> str:
    """The smallest share of its offered creates a run had accepted, over every run kept: ``100.0``."""
    return f"{min(100 * r['accepted'] / r['offered'] for rs in doc['runs'].values() for r in rs):.{digits}f}"


def minutes(doc: dict[str, Any]) -> str:
    """How long a variant's run took end to end (its cluster's bring-up included), over every run kept:
    ``2.7–3.4``."""
    return ranged([r["seconds"] / 60 for rs in doc["runs"].values() for r in rs], ".1f")


def simulator_cell(doc: dict[str, Any], policy: str, key: str = "130", digits: int = 1) -> str:
    """The simulator's published mean over its seeds 42–51 for ``policy`` (``06-FGD``, ``05-BestFit``, ``01-Random``):
    GPU allocation % at ``100`` or ``130`` arrived, fragmentation % at 130 (``frag130``)."""
    return f"{doc['simulator'][policy][key]:.{digits}f}"


def markdown(doc: dict[str, Any], ceiling: float | None = None) -> str:
    """The experiment's table: a row per variant (pods bound and pending, GPU allocation at 100% and ~130% arrived,
    mean fragmentation, one-GPU pods' created → bound p99, the run's length), then the simulator's means."""
    first = _one(doc, next(iter(doc["runs"])))
    total = int(first["bound"] + (first["pending"] or 0))
    lines = [f"| | pods bound of {total} | left pending | GPU allocation at 100% arrived | at ~130% arrived (all) | "
             "mean GPU fragmentation | created → bound p99 (one GPU) | run |", "|---|---|---|---|---|---|---|---|"]
    lines += [_row(LABELS.get(v, v), _one(doc, v), v in CUT_OFF) for v in doc["runs"]]
    for k, v in (doc.get("simulator") or {}).items():
        lines.append(f"| the simulator, {SIMULATOR.get(k, k)} (mean of seeds 42–51) | | | {v['100']:.1f}% | "
                     f"{v['130']:.1f}% | | | |")
    return "\n".join(lines)


def _row(label: str, r: dict[str, Any], cut_off: bool = False, strong: tuple[str, ...] = ("allocation",)) -> str:
    """A run's row of :func:`markdown`'s table, the cells ``strong`` names in bold (``label``, ``counts``,
    ``allocation``); a run cut off by the settle rule has its figures marked "when cut", never bold."""
    cut = " when cut" if cut_off else ""

    def b(cell: str, text: str) -> str:
        return f"**{text}**" if cell in strong and not cut_off else text

    p99 = r["p99"].get("one-gpu")
    latency = f"{p99:.1f} s" if p99 is not None and p99 < 10 else f"{p99:.0f} s" if p99 else "–"
    bound, pending = b("counts", str(r["bound"])), b("counts", f"{r['pending'] or 0:.0f}")
    at100, at130 = b("allocation", f"{r['at100']:.1f}%"), b("allocation", f"{r['at130']:.1f}%")
    return (f"| {b('label', label)} | {bound}{cut} | {pending} | {at100}{cut} | {at130}{cut} | {r['frag']:.1f}% | "
            f"{latency} | {r['seconds'] / 60:.1f} min |")


def dra_table(doc: dict[str, Any], relaxed: str, variant: str = "least-allocated") -> str:
    """``variant`` fitted per node (the relaxation: its run in the stored data ``relaxed``, the experiment's table)
    and per GPU through DRA (this ``--dra`` run), in :func:`markdown`'s columns."""
    node, gpu = _one(_stored(relaxed), variant), _one(doc, variant)
    total = int(gpu["bound"] + (gpu["pending"] or 0))
    return "\n".join([
        f"| {LABELS.get(variant, variant).replace('**', '')} | pods bound of {total} | left pending | "
        "GPU allocation at 100% arrived | "
        "at ~130% arrived (all) | mean GPU fragmentation | created → bound p99 (one GPU) | run |",
        "|---|---|---|---|---|---|---|---|",
        _row("per node (the relaxation, above)", node, strong=()),
        _row("per GPU (DRA)", gpu, strong=("label", "counts", "allocation"))])


def dra_change(doc: dict[str, Any], relaxed: str, key: str, digits: int = 0, variant: str = "least-allocated") -> str:
    """Per GPU less per node (``relaxed``'s run) of one figure of ``variant``'s rows, unsigned: ``145``."""
    per_node = _one(_stored(relaxed), variant)
    return f"{abs(value_at(_one(doc, variant), key) - value_at(per_node, key)):.{digits}f}"


def curve_table(doc: dict[str, Any]) -> str:
    """GPU allocation (% of capacity) every 10% of arrived workload, a row per variant."""
    steps = [p["arrived"] for p in _one(doc, next(iter(doc["runs"])))["curve"] if p["arrived"] > 0]
    lines = ["| arrived | " + " | ".join(f"{a:.0f}" for a in steps) + " |", "|---|" + "---|" * len(steps)]
    for v in doc["runs"]:
        got = {p["arrived"]: p["allocated"] for p in _one(doc, v)["curve"]}
        lines.append(f"| {SHORT.get(v, v)} | " + " | ".join(f"{got[a]:.1f}" if a in got else "" for a in steps)
                     + " |")
    return "\n".join(lines)


def cpu_table(doc: dict[str, Any]) -> str:
    """Where the CPU-only pods went, and the free GPUs left on nodes whose CPU is full, at the end of each run."""
    lines = ["| | CPU-only pods on CPU-only nodes | CPU used: CPU-only nodes / GPU nodes | free GPUs | "
             "of them on CPU-full nodes |", "|---|---|---|---|---|"]
    for v in doc["runs"]:
        r = _one(doc, v)
        lines.append(f"| {SHORT.get(v, v).removesuffix(' (cut off by the settle rule)')} | "
                     f"{r['cpu_pods_on_cpu_nodes']:.0f}% | "
                     f"{r['cpu_used_cpu_nodes']:.1f}% / {r['cpu_used_gpu_nodes']:.1f}% | "
                     f"{r['free_gpus']:.0f} | {r['free_gpus_cpu_full']:.0f} |")
    return "\n".join(lines)


def timed_table(doc: dict[str, Any]) -> str:
    """The whole trace at its own times: a row per variant (bound, ended by lifetimes, GPU allocation and
    fragmentation peak / mean, most pods waiting, created → bound p50 / p99, the run's length)."""
    lines = ["| | bound | ended by their lifetimes | GPU allocation peak / mean | GPU fragmentation peak / mean "
             "(GPUs) | most pods waiting at once | created → bound p50 / p99 | run |", "|---" * 8 + "|"]
    for v in doc["runs"]:
        r = _one(doc, v)
        lines.append(f"| {SHORT.get(v, v)} | {r['bound']} | {r['deleted']} | {r['alloc_peak']:.1f}% / "
                     f"{r['alloc_mean']:.2f}% | {r['frag_peak_gpus']:.0f} / {r['frag_mean_gpus']:.1f} | "
                     f"{r['pending_peak'] or 0:.0f} | {r['lat_p50']:.2f} / {r['lat_p99']:.1f} s | "
                     f"{r['seconds'] / 60:.1f} min |")
    return "\n".join(lines)


def class_table(doc: dict[str, Any]) -> str:
    """Created → bound p50 / p99 by pod class, a row per variant."""
    classes = ["cpu-only", "one-gpu", "shared-gpu", "multi-gpu"]
    lines = ["| | CPU-only | one GPU | shared GPU | multi-GPU |", "|---|---|---|---|---|"]
    for v in doc["runs"]:
        r = _one(doc, v)
        lines.append(f"| {SHORT.get(v, v)} | " + " | ".join(
            f"{r['p50'][c]:.2f} / {r['p99'][c]:.1f} s" if r["p50"].get(c) is not None else "–" for c in classes)
            + " |")
    return "\n".join(lines)


SEED_ORDER = ("random", "dot-product", "gpu-clustering", "gpu-packing", "bestfit", "fgd")
"""The per-seed table's rows: the policies scenario's variants, the simulator's order."""
POLICY_NAME = {"01-Random": "Random", "02-DotProd": "DotProduct", "03-GpuClustering": "GpuClustering",
               "04-GpuPacking": "GpuPacking", "05-BestFit": "BestFit", "06-FGD": "FGD"}


def _by_seed(doc: dict[str, Any], variant: str) -> dict[int, dict[str, Any]]:
    """``variant``'s runs by seed (one run a seed: a second of the same seed is refused, the table shows one)."""
    out: dict[int, dict[str, Any]] = {}
    for r in doc["runs"][variant]:
        if r["seed"] in out:
            raise ValueError(f"{variant}: seed {r['seed']} run twice; the per-seed table shows one run a seed")
        out[int(r["seed"])] = r
    return out


def _sim(doc: dict[str, Any], variant: str, seed: int) -> dict[str, float]:
    return dict(doc["simulator_seeds"][PLUGIN_POLICY[variant]][str(seed)])


def seeds_table(doc: dict[str, Any]) -> str:
    """The policies live, a run per seed: GPU allocation at ~130% arrived beside the simulator's same seed, the
    means over the seeds and their difference, allocation at 100% and fragmentation at the end (the simulator's at
    130%), means over the seeds. No winner marked: :func:`seeds_lead` says which gaps every seed agrees on."""
    seeds = sorted({int(r["seed"]) for v in SEED_ORDER for r in doc["runs"][v]})
    lines = ["| policy | " + " | ".join(f"seed {s}" for s in seeds) + " | mean at ~130% | simulator, same seeds | "
             "difference | at 100%, mean (simulator) | fragmentation at the end, mean (simulator at 130%) |",
             "|---" * (len(seeds) + 6) + "|"]
    for v in SEED_ORDER:
        runs = _by_seed(doc, v)
        sims = {s: _sim(doc, v, s) for s in seeds}
        here, sim = fmean([runs[s]["at130"] for s in seeds]), fmean([sims[s]["130"] for s in seeds])
        cells = [f"{runs[s]['at130']:.1f} ({sims[s]['130']:.1f})" for s in seeds]
        diff = f"{here - sim:+.1f}".replace("-0.0", "+0.0")
        lines.append(f"| {POLICY_NAME[PLUGIN_POLICY[v]]} | " + " | ".join(cells) + f" | {here:.1f} | {sim:.1f} | "
                     f"{diff} | {fmean([runs[s]['at100'] for s in seeds]):.1f} "
                     f"({fmean([sims[s]['100'] for s in seeds]):.1f}) | "
                     f"{fmean([runs[s]['gpu_frag'] for s in seeds]):.2f} "
                     f"({fmean([sims[s]['frag130'] for s in seeds]):.2f}) |")
    return "\n".join(lines).replace("| -", "| \u2212")


def seeds_widest(doc: dict[str, Any], key: str = "at130") -> str:
    """The widest gap of any policy and seed from the simulator's same seed (points): ``0.7``; ``gpu_frag``
    against the simulator's fragmentation at 130%."""
    sim_key = {"at130": "130", "at100": "100", "gpu_frag": "frag130"}[key]
    gaps = [abs(r[key] - _sim(doc, v, int(r["seed"]))[sim_key]) for v in SEED_ORDER for r in doc["runs"][v]]
    return f"{max(gaps):.1f}"


def seeds_mean(doc: dict[str, Any], variant: str) -> str:
    """``variant``'s mean GPU allocation at ~130% over its seeds: ``92.2``."""
    return f"{fmean([r['at130'] for r in doc['runs'][variant]]):.1f}"


def seeds_lead(doc: dict[str, Any], above: str, below: str) -> str:
    """How far ``above`` places more than ``below`` at ~130%, seed by seed: ``2.3 points (2.2–2.4), in every seed``,
    or ``in 2 of 3 seeds`` where the seeds disagree (then the two are not told apart)."""
    a, b = _by_seed(doc, above), _by_seed(doc, below)
    gaps = [a[s]["at130"] - b[s]["at130"] for s in sorted(a) if s in b]
    ahead = sum(g > 0 for g in gaps)
    where = "in every seed" if ahead == len(gaps) else f"ahead in {ahead} of {len(gaps)} seeds"
    lo, hi = f"{min(gaps):.1f}", f"{max(gaps):.1f}"
    return f"{fmean(gaps):.1f} points ({lo if lo == hi else f'{lo}–{hi}'}), {where}".replace("-", "\u2212")


def seeds_bound(doc: dict[str, Any]) -> str:
    """The runs and the pods each bound: ``18 runs, 8024–8161 pods bound each``."""
    bound = [r["bound"] for v in SEED_ORDER for r in doc["runs"][v]]
    return f"{len(bound)} runs, {min(bound)}–{max(bound)} pods bound each"


def _every_run(doc: dict[str, Any], first: str) -> dict[str, dict[int, list[float]]]:
    """The rerun policies' GPU allocation at ~130% by seed, every run in the order they ran: the per-seed table's (the
    stored data file named first in ``first``, comma-separated), then the other files ``first`` names and this one
    (more runs of some policies). A policy is in when one of those files ran it again."""
    table, *earlier = [_stored(name) for name in first.split(",")]
    more = [*earlier, doc]
    out: dict[str, dict[int, list[float]]] = {}
    for variant in [v for v in table["runs"] if any(v in d["runs"] for d in more)]:
        for r in [*table["runs"][variant], *(r for d in more for r in d["runs"].get(variant, []))]:
            out.setdefault(variant, {}).setdefault(int(r["seed"]), []).append(float(r["at130"]))
    return out


def more_runs_table(doc: dict[str, Any], first: str) -> str:
    """The policies run again (see :func:`_every_run`): each run's GPU allocation at ~130% per seed, the per-seed
    table's run first, and the mean of every run."""
    every = _every_run(doc, first)
    variants = [v for v in SEED_ORDER if v in every]
    seeds = sorted({s for runs in every.values() for s in runs})
    lines = ["| policy | " + " | ".join(f"seed {s}" for s in seeds) + " | mean of every run |",
             "|---" * (len(seeds) + 2) + "|"]
    for v in variants:
        cells = [", ".join(f"{x:.1f}" for x in every[v][s]) for s in seeds]
        mean = fmean([x for s in seeds for x in every[v][s]])
        lines.append(f"| {POLICY_NAME[PLUGIN_POLICY[v]]} | " + " | ".join(cells) + f" | {mean:.1f} |")
    return "\n".join(lines)


def more_runs_test(doc: dict[str, Any], first: str, above: str, below: str) -> str:
    """``above`` against ``below`` by the gate's paired t-test over every run of each seed (a seed's k-th run of
    one paired with its k-th of the other: the same pod list), and how many seeds put every run of ``above`` over
    every run of ``below``: ``+0.2% (90% CI +0.1..+0.3%, 9 pairs): ordered; every run above in 2 of 3 seeds``.
    Ordered where the interval excludes no difference, else not told apart."""
    return _paired(_every_run(doc, first), above, below)


def _paired(every: dict[str, dict[int, list[float]]], above: str, below: str) -> str:
    """:func:`more_runs_test` over runs already read (:func:`_every_run`)."""
    from kwokbench.compare.stats import compare

    a, b = every[above], every[below]
    ups, downs = [], []
    for s in sorted(a):
        n = min(len(a[s]), len(b.get(s, [])))
        ups += a[s][:n]
        downs += b.get(s, [])[:n]
    c = compare("GPU allocation at ~130%", downs, ups, True, max_regression=1e-9, paired=True)
    if c.ratio is None or c.ci is None:
        return f"undecided ({c.reason})"
    pct = [f"{100 * (x - 1):+.1f}" for x in (c.ratio, *c.ci)]
    word = {"better": "ordered", "regression": "ordered the other way"}.get(c.decision, "not told apart")
    clear = sum(min(a[s]) > max(b[s]) for s in a if s in b)
    text = (f"{pct[0]}% ({100 * c.level:.0f}% CI {pct[1]}..{pct[2]}%, {c.pairs} pairs): {word}; every run above "
            f"every run of the other in {clear} of {len(set(a) & set(b))} seeds")
    return text.replace("-", "\u2212")


def ranking_table(doc: dict[str, Any], first: str) -> str:
    """Each rerun policy against the next below it in the simulator's order, by :func:`more_runs_test` (the gate's
    paired test over every run of each seed), with the runs it pairs a seed."""
    every = _every_run(doc, first)
    order = [v for v in reversed(SEED_ORDER) if v in every]
    lines = ["| policy | against the next below | runs a seed | by the gate's paired test |", "|---|---|---|---|"]
    for above, below in itertools.pairwise(order):
        n = sorted({min(len(every[above][s]), len(every[below].get(s, []))) for s in every[above]})
        runs = f"{n[0]}" if len(n) == 1 else f"{n[0]}–{n[-1]}"
        lines.append(f"| {POLICY_NAME[PLUGIN_POLICY[above]]} | {POLICY_NAME[PLUGIN_POLICY[below]]} | {runs} | "
                     f"{_paired(every, above, below)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
