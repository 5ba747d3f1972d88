"""Does the plugin author's gate (action.yml) fail a pull request whose plugin is modestly slower, and what does the
job show?

The action runs as a GitHub runner runs it (tests/support/action_runner.py: each step's script with the runner's
variables) on a throwaway plugin repository (tests/support/plugin_repo.py): the pull request whose Score spins
``MODEST`` µs per node (tests/support/plugins.py) against the commit that added the gate, with the action's defaults
(duets, base against head at once; the sequential gate's looks) but ``run-args`` as tests/e2e/test_action.py gives
them (300 pods). ``--repeat N`` runs N jobs one after another. Each job's row: its exit code, the verdict of each row
of its summary, the pairs the sequential gate took, the job's minutes, and the summary as the job wrote it.

    .venv/bin/python benchmarks/bench_action.py --repeat 3 --data docs/results/data/action-DATE.json

The guide (docs/guides/ci-action.md) shows a stored job's summary (:func:`summary`) and the jobs' verdicts
(:func:`caught`). The plugin's two builds and the action's own install of kwokbench are the first job's (about a
minute each with warm Go caches).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stored import REPO, here, ranged, write  # a sibling: benchmarks/ is on a script's path

if str(REPO) not in sys.path:  # the action's runner and the plugin repository are the test suite's
    sys.path.insert(0, str(REPO))

RUN_ARGS = "--set workloads.0.count=300"
"""As tests/e2e/test_action.py runs the action: 300 pods a side, a job of a few minutes."""
ROW = re.compile(r"^\| (?P<metric>[^|]+?) \| [^|]* \| [^|]* \| (?P<change>[^|]*?) \| (?P<verdict>[^|]*?) \|", re.M)
"""A row of the summary's table: metric, base and head medians, the change with its interval, the verdict (then the
smallest detectable change and the detail)."""


def rows(summary_text: str) -> dict[str, tuple[str, str]]:
    """Each metric of a job's summary: (change, verdict)."""
    return {m["metric"]: (m["change"], m["verdict"]) for m in ROW.finditer(summary_text) if m["metric"] != "metric"}


def job(repo: dict[str, str], runner_temp: Path, out: str) -> dict[str, Any]:
    """One job of the action: the pull request ``slow`` against ``gate``."""
    from tests.support.action_runner import run_action
    from tests.support.plugin_repo import checkout

    ws = checkout(repo, "slow")
    t0 = time.monotonic()
    res = run_action(ws, runner_temp, {"scenario": "perf/scenario.yaml", "run-args": RUN_ARGS, "out": out},
                     repo["gate"])
    pairs = re.findall(r"stopped after (\d+) pairs", res.log)
    return {"code": res.code, "minutes": (time.monotonic() - t0) / 60, "pairs": int(pairs[-1]) if pairs else None,
            "summary": res.summary}


def caught(doc: dict[str, Any], metric: str = "scheduler_cpu_per_pod [plugin]") -> str:
    """How many of the stored jobs read ``metric`` a regression and failed: ``3 of 3``."""
    jobs = doc["runs"]["slow"]
    n = sum(1 for j in jobs if j["code"] == 1 and "regression" in rows(j["summary"]).get(metric, ("", ""))[1])
    return f"{n} of {len(jobs)}"


def pairs(doc: dict[str, Any]) -> str:
    """The pairs the sequential gate took before it decided, over the stored jobs: ``3``, ``3–4``."""
    return ranged([j["pairs"] for j in doc["runs"]["slow"] if j["pairs"] is not None], ".0f")


def change(doc: dict[str, Any], metric: str = "scheduler_cpu_per_pod [plugin]") -> str:
    """``metric``'s change over the stored jobs, lowest to highest: ``+30.1%``, ``+30.1–33.7%``."""
    xs = sorted(float(rows(j["summary"])[metric][0].split("%")[0]) for j in doc["runs"]["slow"])
    lo, hi = f"{xs[0]:+.1f}", f"{xs[-1]:+.1f}"
    return f"{lo}%" if lo == hi else f"{lo}–{hi.lstrip('+')}%"


def summary(doc: dict[str, Any], index: int = 0) -> str:
    """The job summary of stored job ``index`` as the job wrote it, its headings set below a page's sections and its
    warnings (the quoted lines at its end, one per run or metric) counted rather than shown."""
    text = doc["runs"]["slow"][index]["summary"]
    warnings = [line for line in text.splitlines() if line.startswith("> ")]
    kept = "\n".join(line for line in text.splitlines() if not line.startswith("> "))
    kept = re.sub(r"^(#+) ", lambda m: "#" * max(4, len(m.group(1)) + 2) + " ", kept, flags=re.M)
    kept = re.sub(r"\n{3,}", "\n\n", kept).strip()
    return kept + (f"\n\n_(and {len(warnings)} warnings, one per run or metric that needs one)_" if warnings else "")


def table(doc: dict[str, Any]) -> str:
    out = ["| job | exit | scheduler_cpu_per_pod [plugin] | scheduler_cpu_per_pod [stock] | pairs | minutes |",
           "|---|---|---|---|---|---|"]
    for i, j in enumerate(doc["runs"]["slow"]):
        got = rows(j["summary"])
        cells = [" ".join(got.get(m, ("–", ""))).strip()
                 for m in ("scheduler_cpu_per_pod [plugin]", "scheduler_cpu_per_pod [stock]")]
        out.append(f"| {i + 1} | {j['code']} | {cells[0]} | {cells[1]} | {j['pairs']} | {j['minutes']:.1f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="jobs, one after another")
    ap.add_argument("--data", type=Path, help="keep every job's row and summary in this file")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat: at least 1")
    from tests.support.plugin_repo import plugin_repository

    with tempfile.TemporaryDirectory(prefix="kwokbench-action-") as tmp:
        repo = plugin_repository(Path(tmp) / "plugin-repo")
        jobs = []
        for i in range(args.repeat):
            jobs.append(job(repo, Path(tmp) / "runner-temp", f"kwokbench-out/job-{i}"))
            print(f"job {i + 1}: exit {jobs[-1]['code']}, {jobs[-1]['pairs']} pairs, {jobs[-1]['minutes']:.1f} min",
                  flush=True)
    doc = {**here("the plugin author's action on a pull request whose Score spins MODEST µs per node, each job's "
                  "verdicts and summary (benchmarks/bench_action.py)", "bench_action.py"), "runs": {"slow": jobs}}
    if args.data:
        write(args.data, doc)
    print(table(doc))


if __name__ == "__main__":
    main()
