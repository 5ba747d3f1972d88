"""What limited a run: ``limited_by`` on constructed runs, one case per verdict, each on a fresh cluster.

Each case is `kwokbench run scenarios/quickstart.yaml` with ``--set`` overrides that put one stage clearly in the way
(:data:`CASES`): the arrivals (the scheduler binds pods as they come), the scheduler's client-side rate limits, a
scheduler that scores every one of 5000 nodes, a submitter with two connections, an apiserver offered far more than
it takes. Prints each case's verdict and its sentence; ``--data FILE`` keeps every run's verdict, sentence and
evidence with the command, commit, day and host, from which docs/results/index.md renders :func:`table`. A verdict
says where *this* host's run was limited: on a busy host a case may read ``host``, which is the verdict being
right, not the case failing.

    .venv/bin/python benchmarks/bench_limited_by.py                    # every case (~8 min here)
    .venv/bin/python benchmarks/bench_limited_by.py --case apiserver   # one of them
    .venv/bin/python benchmarks/bench_limited_by.py --runs DIR         # only print, from runs already stored in DIR
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from stored import REPO, collect, provenance, run_scenario, write  # a sibling: benchmarks/ is on a script's path

SCENARIO = REPO / "scenarios" / "quickstart.yaml"

ALL_NODES_SCORED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
"""
"""A kube-scheduler configuration that scores every feasible node (the default stops at a share of a large
cluster): more work per pod than the rest of the control plane."""

CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "arrival": ("100 nodes, 500 pods at 50/s", ("workloads.0.count=500", "workloads.0.arrival.qps=50")),
    "scheduler-client": ("stock client limits (`cluster.qps_limits=true`), 20 nodes, 500 pods at 250/s",
                         ("cluster.qps_limits=true", "cluster.node_groups.0.count=20", "workloads.0.count=500",
                          "workloads.0.arrival.qps=250")),
    "scheduler": ("5000 nodes all scored (`percentageOfNodesToScore: 100`), 600 pods at 100/s",
                  ("cluster.node_groups.0.count=5000", "workloads.0.count=600", "workloads.0.arrival.qps=100",
                   "schedulers.0.config={config}")),
    "harness": ("`workloads.0.connections=2`, 1500 pods at 1500/s",
                ("workloads.0.connections=2", "workloads.0.count=1500", "workloads.0.arrival.qps=1500")),
    "apiserver": ("500 nodes, 3000 pods at 2000/s",
                  ("cluster.node_groups.0.count=500", "workloads.0.count=3000", "workloads.0.arrival.qps=2000")),
}
"""Each case: what it is, as the table names it, and its ``--set`` overrides of quickstart.yaml (``{config}``: the
configuration :data:`ALL_NODES_SCORED` written beside the runs)."""


def row(run_dir: Path) -> dict[str, Any]:
    """A stored run's verdict, sentence and evidence (its summary's ``limited_by``), by its case: the folder the
    benchmark ran it into (``<root>/<case>/quickstart/<run>``)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    lb = summary.get("limited_by") or {}
    return {"variant": run_dir.parent.parent.name, "verdict": lb.get("verdict"), "sentence": lb.get("sentence"),
            "evidence": lb.get("evidence") or {},
            "started": json.loads((run_dir / "meta.json").read_text()).get("started_at")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", default=[], choices=list(CASES), help="only these cases (default: all)")
    ap.add_argument("--runs", type=Path, help="print from runs stored here instead of running")
    ap.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--data", type=Path, help="write each run's verdict and evidence, the command, commit, day and "
                                              "host here (JSON)")
    args = ap.parse_args()
    cases = args.case or list(CASES)
    root = args.runs
    if root is None:
        root = args.out or Path(tempfile.mkdtemp(prefix="bench-limited-by-"))
        config = root / "all-nodes-scored.yaml"
        root.mkdir(parents=True, exist_ok=True)
        config.write_text(ALL_NODES_SCORED)
        for case in cases:
            run_scenario(SCENARIO, root / case, [], sets=[s.format(config=config) for s in CASES[case][1]])
    runs = {c: rs for c, rs in collect(root, row, list(CASES)).items() if c in cases}
    missing = [c for c in cases if c not in runs]
    if missing:
        raise SystemExit(f"no stored run of {', '.join(missing)} in {root}")
    for case, rs in runs.items():
        for r in rs:
            print(f"{case:<17} {r['verdict'] or '-':<17} {r['sentence']}")
    if args.data:
        # the runs' own commit, day and host (their meta.json), with the command that made them
        options = "".join(f" --case {c}" for c in cases) if cases != list(CASES) else ""
        doc = provenance(root, runs, SCENARIO, "bench_limited_by.py", options, list(runs), repeat=1)
        doc["what"] = "limited_by on constructed runs of scenarios/quickstart.yaml, one case per verdict"
        write(args.data, {**doc, "cases": {c: {"what": CASES[c][0], "sets": list(CASES[c][1])} for c in runs}})


def table(doc: dict[str, Any]) -> str:
    """The results page's table: each case, its verdict (bold where it is the verdict the case constructs) and the
    sentence that gives its evidence, a row per run."""
    out = ["| case | constructed for | verdict and its evidence |", "|---|---|---|"]
    for case, rs in doc["runs"].items():
        for r in rs:
            verdict = f"**`{r['verdict']}`**" if r["verdict"] == case else f"`{r['verdict']}`"
            sentence = str(r["sentence"]).split(": ", 1)[-1]
            out.append(f"| {doc['cases'][case]['what']} | `{case}` | {verdict}: {sentence} |")
    return "\n".join(out)


def verdicts(doc: dict[str, Any]) -> str:
    """How many runs read the verdict their case constructs: ``4 of 5``."""
    rs = [(case, r) for case, runs in doc["runs"].items() for r in runs]
    return f"{sum(r['verdict'] == case for case, r in rs)} of {len(rs)}"


if __name__ == "__main__":
    main()
