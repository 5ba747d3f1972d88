"""This host's ceiling: how fast the same kube-scheduler binds pods in-process, on this machine and version.

A kwokbench throughput means little without the limit it is measured against, and on shared machines
that limit moves from host to host. Kubernetes ships the yardstick: scheduler_perf runs the real
scheduler against an in-process apiserver and etcd, without kwok, controller-manager or a load
generator (:mod:`kwokbench.toolchain.scheduler_perf`). ``kwokbench ceiling`` runs its SchedulingBasic
workload closest to a cluster's size and stores the figure per Kubernetes version and host:

    $KWOKBENCH_CACHE/ceilings/<kubernetes version>/<host fingerprint>/<workload>-<UTC time>.json

with the test's output next to it (``.log``) and each run's raw data items in ``raw/``.

Analysis puts every run's throughput next to the ceiling of its host and version (:func:`ceiling_section`).

The ceiling of a run is ``pods_per_second``: measured pods / SchedulingDuration (from the first pod's
creation to the last bind), the same definition as kwokbench's throughput average. scheduler_perf's
SchedulingThroughput (the mean and percentiles of 1 s samples, without the first partial second) is kept
next to it: on short workloads it rests on one or two samples (500Nodes measures 1000 pods in ~3 s on 2
cores, and its mean jumped between 299 and 622 pods/s from run to run).

A run whose pods have DRA claims is put next to scheduler_perf's DRA case (pods each claiming a device through a
template, :data:`DRA_TEST_CASE`), stored as ``<test case>-<workload>-<UTC time>.json`` beside the others.

Ceiling file format history: 1, the first (figures of each run, their median and spread; ``test_case`` is read
as SchedulingBasic where absent).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import yaml

from kwokbench import __version__
from kwokbench.errors import ClusterError, ScenarioError, StoreError, ToolchainError
from kwokbench.progress import Reporter, Silent

FORMAT_VERSION = 1
TEST_CASE = "SchedulingBasic"
DRA_TEST_CASE = "SchedulingWithResourceClaimTemplate"
"""The ceiling of a run whose pods have DRA claims: each pod's claim from a template, as ``claims:`` makes them."""
STEADY_DRA_TEST_CASE = "SteadyStateClusterResourceClaimTemplate"
"""scheduler_perf's DRA case with ten pods kept in flight for a duration on a cluster whose devices are empty, half
or full (``initClaims`` allocated first): a throughput at a fill level, not over a fixed count of pods."""
PARTITIONABLE_TEST_CASE = "Partitionable"
"""scheduler_perf's partitionable devices (``dra/partitionabledevices``): slices of devices drawing on counter sets,
half their claims allocated first, pods of two-device claims kept in flight for a duration; the allocator has to
backtrack once to place them."""
TEST_CASES = {TEST_CASE: "misc", DRA_TEST_CASE: "dra", "SchedulingWithResourceClaim": "dra",
              STEADY_DRA_TEST_CASE: "dra", PARTITIONABLE_TEST_CASE: "dra/partitionabledevices"}
"""The test cases ``kwokbench ceiling --test-case`` runs, and the scheduler_perf package of each."""
MIN_MEASURED_PODS = 1000
"""Workloads measuring fewer pods finish within scheduler_perf's 1 s sampling interval: no throughput."""
SPREAD_WARN = 0.10
"""Runs further apart than this (max − min over the median) are reported as unstable (pyperf's 10%)."""
HOST_KEYS = ("hostname", "cpu_model", "cpus", "memory_bytes", "kernel")
"""What identifies a host: a ceiling is only compared with runs on the same machine and kernel."""


# ---- scheduler_perf's workloads (pure) ------------------------------------------------------------


@dataclass(frozen=True)
class PerfWorkload:
    """One workload of a scheduler_perf test case (``performance-config.yaml``)."""

    name: str
    nodes: int
    """``initNodes``: the cluster size."""
    pods: int
    """``measurePods``: the pods whose scheduling is measured."""
    init_pods: int = 0
    labels: tuple[str, ...] = ()
    feature_gates: tuple[tuple[str, bool], ...] = ()
    test_case: str = TEST_CASE
    duration_seconds: float = 0.0
    """A steady-state workload: pods kept in flight for this long (``pods`` is 0: no fixed count is measured)."""
    in_flight: int = 0
    """A steady-state workload's pods in flight (each one scheduled is deleted and replaced)."""

    @property
    def fill(self) -> str:
        """The steady-state DRA case's fill level (``empty``, ``half``, ``full``: its name's first part)."""
        return self.name.split("_", 1)[0] if self.duration_seconds and self.test_case == STEADY_DRA_TEST_CASE else ""

    @property
    def size(self) -> str:
        """What it measures, in words: ``half, 10 pods in flight for 10 s`` or ``0 + 1000 pods``."""
        if not self.duration_seconds:
            return f"{self.init_pods} + {self.pods} pods"
        return ", ".join(filter(None, (self.fill, f"{self.in_flight} pods in flight for {self.duration_seconds:g} s")))

    @property
    def label_filter(self) -> str:
        """The ``-perf-scheduling-label-filter`` that lets this workload run (unlabelled ones need none)."""
        return "performance" if "performance" in self.labels else ""


def perf_workloads(config_text: str, test_case: str = TEST_CASE) -> list[PerfWorkload]:
    """The workloads of ``test_case`` in a scheduler_perf config whose params are plain counts (the nodes:
    ``initNodes``, or the DRA cases' ``nodesWithDRA`` + ``nodesWithoutDRA``)."""
    try:
        cases = yaml.safe_load(config_text) or []
    except yaml.YAMLError as e:
        raise ToolchainError(f"scheduler_perf's performance-config.yaml is not valid YAML: {e}") from e
    case = next((c for c in cases if isinstance(c, dict) and c.get("name") == test_case), None)
    if case is None:
        raise ToolchainError(f"scheduler_perf's performance-config.yaml has no {test_case} test case")
    out = []
    for w in case.get("workloads") or []:
        p = w.get("params") or {}
        nodes = p.get("initNodes")
        if nodes is None and isinstance(p.get("nodesWithDRA"), int):
            nodes = p["nodesWithDRA"] + int(p.get("nodesWithoutDRA") or 0)
        in_flight = _steady_pods(case, p)
        duration = _seconds(p.get("duration")) if in_flight else 0.0
        if not isinstance(nodes, int) or not (isinstance(p.get("measurePods"), int) or duration):
            continue
        gates = {**(case.get("featureGates") or {}), **(w.get("featureGates") or {})}
        out.append(PerfWorkload(str(w["name"]), nodes, 0 if duration else int(p.get("measurePods") or 0),
                                int(p.get("initPods") or 0),
                                tuple([*(case.get("labels") or []), *(w.get("labels") or [])]),
                                tuple(sorted((str(k), bool(v)) for k, v in gates.items())), test_case,
                                duration, in_flight if duration else 0))
    return out


def _steady_pods(case: Mapping[str, Any], params: Mapping[str, Any]) -> int:
    """The pods a test case's steady-state ``createPods`` keeps in flight with ``params`` (0 when it has none): its
    ``steadyState`` (or ``steadyStateParam``) on, its ``count`` (or ``countParam``)."""
    def value(op: Mapping[str, Any], key: str) -> Any:
        ref = op.get(f"{key}Param")
        return params.get(ref.lstrip("$")) if isinstance(ref, str) else op.get(key)

    for op in case.get("workloadTemplate") or []:
        if isinstance(op, dict) and op.get("opcode") == "createPods" and value(op, "steadyState") is True:
            count = value(op, "count")
            return count if isinstance(count, int) else 0
    return 0


def _seconds(value: Any) -> float:
    """A scheduler_perf duration param (``10s``, ``1m``) in seconds; 0 for anything else."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(value or ""))
    return float(m[1]) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m[2]] if m else 0.0


def nearest_workload(nodes: int, pods: int | None, available: Sequence[PerfWorkload],
                     defaults: Mapping[str, bool] | None = None, fill: str | None = None) -> str:
    """The workload closest to a cluster of ``nodes`` nodes scheduling ``pods`` pods (sizes compared on a
    log scale, nodes first); among equals, the one whose feature gates differ least from a stock
    scheduler's ``defaults``. Workloads too short to measure a throughput are never picked. Steady-state
    workloads measure no count of pods: ``pods`` does not apply, ``fill`` picks their fill level."""
    if nodes <= 0 or (pods is not None and pods <= 0):
        raise ValueError("nodes and pods must be positive")
    usable = [w for w in available if (w.pods >= MIN_MEASURED_PODS or w.duration_seconds) and w.nodes > 0
              and (fill is None or w.fill == fill)]
    if not usable:
        case = available[0].test_case if available else TEST_CASE
        if fill is not None:
            levels = sorted({w.fill for w in available if w.fill})
            raise ScenarioError(f"--fill {fill}: scheduler_perf's {case} has "
                                + (f"the fill levels {', '.join(levels)}" if levels else "no fill levels"))
        raise ToolchainError(f"scheduler_perf has no {case} workload measuring {MIN_MEASURED_PODS}+ pods")
    stock = defaults or {}

    def key(w: PerfWorkload) -> tuple[float, float, int, int, str]:
        dn = abs(math.log(nodes / w.nodes))
        dp = abs(math.log(pods / w.pods)) if pods and w.pods else 0.0
        off_stock = sum(stock.get(g) != v for g, v in w.feature_gates)
        return round(dn + dp, 9), round(dn, 9), off_stock, len(w.feature_gates), w.name

    return min(usable, key=key).name


def throughput_figures(data_items: Mapping[str, Any], pods: int | None = None) -> dict[str, float] | None:
    """SchedulingThroughput (pods/s: the mean and percentiles of its 1 s samples) from a data-items
    document; with the measured ``pods``, also ``overall``: pods / SchedulingDuration (creation to last
    bind, what kwokbench's average is), which short workloads need: their first, partial second is not
    sampled, so the mean of one or two samples overstates."""
    names = {"Average": "average", "Perc50": "p50", "Perc90": "p90", "Perc95": "p95", "Perc99": "p99"}
    items = {(i.get("labels") or {}).get("Metric"): i.get("data") for i in data_items.get("dataItems") or []}
    data = items.get("SchedulingThroughput")
    if not data:
        return None
    out = {ours: float(data[theirs]) for theirs, ours in names.items() if theirs in data}
    duration = (items.get("SchedulingDuration") or {}).get("Duration")
    if duration:
        out["duration_seconds"] = float(duration)
        if pods:
            out["overall"] = pods / float(duration)
    return out


# ---- stored ceilings --------------------------------------------------------------------------------


def host_fingerprint(host: Mapping[str, Any]) -> str:
    """``<hostname>-<hash>`` of the host's CPU model, cores, memory, kernel and name."""
    key = "|".join(str(host.get(k, "")) for k in HOST_KEYS)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(host.get("hostname") or "host"))[:40]
    return f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def ceilings_dir(cache: Path | None = None) -> Path:
    from kwokbench.toolchain.install import cache_dir

    return (cache or cache_dir()) / "ceilings"


@dataclass(frozen=True)
class Ceiling:
    """A stored ceiling: scheduler_perf's throughput on one host and Kubernetes version."""

    pods_per_second: float
    """Median over the measured runs of their ``pods_per_second`` (pods / SchedulingDuration)."""
    measured_at: datetime
    workload: str
    nodes: int
    pods: int
    kubernetes: str
    host: str
    """The host fingerprint."""
    runs: tuple[float, ...] = ()
    path: Path | None = field(default=None, compare=False)
    test_case: str = TEST_CASE

    @property
    def spread(self) -> float | None:
        """(max − min) / median of the runs' figures; None with a single run."""
        if len(self.runs) < 2:
            return None
        return (max(self.runs) - min(self.runs)) / statistics.median(self.runs)

    def age_seconds(self, now: datetime) -> float:
        """Seconds from the measurement to ``now`` (negative: measured after it)."""
        return (now - self.measured_at).total_seconds()


def read_ceiling(path: Path) -> Ceiling:
    """A stored ceiling; StoreError (one line) when unreadable or of a format this kwokbench does not read."""
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as e:
        raise StoreError(f"{path}: unreadable: {e}") from e
    if not isinstance(doc, dict) or doc.get("format_version") != FORMAT_VERSION:
        found = doc.get("format_version") if isinstance(doc, dict) else None
        raise StoreError(f"{path}: ceiling format version {found!r} is not supported by kwokbench {__version__} "
                         f"(it reads version {FORMAT_VERSION})")
    try:
        return Ceiling(float(doc["pods_per_second"]), _utc(doc["measured_at"]), str(doc["workload"]),
                       int(doc["params"]["nodes"]), int(doc["params"]["pods"]), str(doc["kubernetes"]),
                       str(doc["host_fingerprint"]),
                       tuple(float(r["pods_per_second"]) for r in doc.get("runs") or []
                             if r.get("pods_per_second") is not None),
                       path, str(doc.get("test_case") or TEST_CASE))
    except (KeyError, TypeError, ValueError) as e:
        raise StoreError(f"{path}: not a kwokbench ceiling ({e!r} missing or malformed)") from e


def stored_ceilings(version: str, host: str, root: Path | None = None) -> list[Ceiling]:
    """Every readable ceiling of a version and host fingerprint (a file from a newer kwokbench is skipped:
    analysing a run must not fail over a ceiling)."""
    d = (root or ceilings_dir()) / version / host
    out = []
    for f in sorted(d.glob("*.json")) if d.is_dir() else []:
        with contextlib.suppress(StoreError):
            out.append(read_ceiling(f))
    return out


def pick_ceiling(ceilings: Iterable[Ceiling], nodes: int, test_case: str = TEST_CASE) -> Ceiling | None:
    """The ceiling of ``test_case`` measured at the node count nearest ``nodes`` (log scale), the latest among
    those."""
    cs = [c for c in ceilings if c.nodes > 0 and c.pods_per_second > 0 and c.test_case == test_case]
    if not cs or nodes <= 0:
        return None
    best = min(round(abs(math.log(nodes / c.nodes)), 9) for c in cs)
    return max((c for c in cs if round(abs(math.log(nodes / c.nodes)), 9) == best), key=lambda c: c.measured_at)


def latest_ceiling(version: str, host: Mapping[str, Any] | str, nodes: int,
                   root: Path | None = None, test_case: str = TEST_CASE) -> Ceiling | None:
    """The ceiling for a run of ``nodes`` nodes on ``host`` (a fingerprint, or a run's ``meta.host``)."""
    fp = host if isinstance(host, str) else host_fingerprint(host)
    return pick_ceiling(stored_ceilings(version, fp, root), nodes, test_case)


def _utc(text: str) -> datetime:
    t = datetime.fromisoformat(text)
    return t if t.tzinfo else t.replace(tzinfo=UTC)


# ---- next to a run's figures ------------------------------------------------------------------------


def ceiling_section(summary: Mapping[str, Any], meta: Mapping[str, Any],
                    root: Path | None = None) -> dict[str, Any] | None:
    """``summary["ceiling"]``: the run's throughput against its host's and version's ceiling. ``age_seconds``
    runs from the measurement to the run's start (negative: measured after the run). None when no
    ceiling is stored, or the control plane ran elsewhere (an attached cluster)."""
    cluster, host = meta.get("cluster") or {}, meta.get("host") or {}
    version = (meta.get("toolchain") or {}).get("kubernetes")
    throughput = (summary.get("throughput") or {}).get("average")
    if cluster.get("attached") or not host or not version or not cluster.get("nodes") or throughput is None:
        return None
    # a run whose pods claim devices is measured against scheduler_perf's DRA case, not against bare pods
    case = DRA_TEST_CASE if summary.get("claims") else TEST_CASE
    c = latest_ceiling(str(version), host, int(cluster["nodes"]), root, case)
    if c is None:
        return None
    started = meta.get("started_at")
    age = c.age_seconds(_utc(started)) if isinstance(started, str) else None
    return {"pods_per_second": c.pods_per_second, "measured_at": c.measured_at.isoformat(), "age_seconds": age,
            "test_case": c.test_case, "workload": c.workload, "nodes": c.nodes,
            "ratio": float(throughput) / c.pods_per_second,
            "spread": c.spread, "runs": len(c.runs), "file": str(c.path) if c.path else None}


def cpu_shares(summary: dict[str, Any], meta: Mapping[str, Any]) -> None:
    """Where the host's cores went over the pending window: ``cores_share`` of each process (its average
    cores over the window / the host's cores) and ``summary["kwokbench_cpu"]``, the submitter's share
    (its CPU over the phases, which the window spans but for the last pods' binding)."""
    cpus = (meta.get("host") or {}).get("cpus")
    window = (summary.get("throughput") or {}).get("window_seconds")
    if not cpus or not window:
        return
    for p in (summary.get("processes") or {}).values():
        if p.get("cores_window") is not None:
            p["cores_share"] = p["cores_window"] / cpus
    harness = [ph["harness_cpu_seconds"] for ph in meta.get("phases") or []
               if isinstance(ph, dict) and ph.get("harness_cpu_seconds") is not None]
    if harness:
        used = float(sum(harness))
        summary["kwokbench_cpu"] = {"cpu_seconds": used, "cores_share": used / window / cpus, "cpus": cpus,
                                    "window_seconds": window}


# ---- measuring --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunFigures:
    figures: dict[str, float]
    wall_seconds: float
    exit_code: int
    note: str = ""

    @property
    def pods_per_second(self) -> float:
        """Pods / SchedulingDuration (kwokbench's definition of an average); the samples' mean without it."""
        return self.figures.get("overall", self.figures["average"])


def measure_ceiling(nodes: int, pods: int | None, runs: int = 1, timeout: float = 900.0,
                    reporter: Reporter | None = None, cache: Path | None = None,
                    test_case: str = TEST_CASE, kubernetes: str | None = None,
                    fill: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Run scheduler_perf's ``test_case`` workload of Kubernetes ``kubernetes`` (default: the pinned release)
    nearest ``nodes``/``pods`` (a steady-state case's: nearest ``nodes`` at ``fill``, default empty) ``runs``
    times; store and return the ceiling."""
    from kwokbench.store import _atomic_write, host_info
    from kwokbench.toolchain import Toolchain
    from kwokbench.toolchain.scheduler_perf import ensure_scheduler_perf

    rep = reporter or Silent()
    if test_case not in TEST_CASES:
        raise ScenarioError(f"--test-case {test_case}: not one kwokbench runs (known: {', '.join(TEST_CASES)})")
    steady = test_case == STEADY_DRA_TEST_CASE
    if fill is not None and not steady:
        raise ScenarioError(f"--fill applies to {STEADY_DRA_TEST_CASE}, not to {test_case}")
    if steady and pods is not None:
        raise ScenarioError(f"{STEADY_DRA_TEST_CASE} keeps 10 pods in flight for a duration: --pods does not "
                            "apply (--fill empty|half|full picks how many devices are allocated first)")
    for what in stop_orphans():
        rep.warn(f"stopped {what}, left by a ceiling run that was killed")
    etcd = next(s for s in Toolchain(cache).check(optional=False) if s.binary == "etcd")
    if not etcd.ok:  # checked before a build of minutes
        raise ToolchainError(f"etcd {etcd.version} is missing ({etcd.problem} at {etcd.path}): scheduler_perf starts "
                             "it from PATH; run `kwokbench tools install --core-only`")
    release = kubernetes or Toolchain(cache).kubernetes
    perf = ensure_scheduler_perf(rep, cache, version=release).of(TEST_CASES[test_case])
    if not perf.has(perf.suite):
        raise ScenarioError(f"--test-case {test_case}: Kubernetes {release}'s scheduler_perf has no {perf.suite} "
                            "package")
    workloads = {w.name: w for w in perf_workloads(perf.config.read_text(), test_case)}
    w = workloads[nearest_workload(nodes, pods, list(workloads.values()), perf.feature_defaults(),
                                   (fill or "empty") if steady else None)]
    host = {k: v for k, v in host_info().items() if k in HOST_KEYS}
    started = datetime.now(UTC)
    out_dir = ceilings_dir(cache) / perf.version / host_fingerprint(host)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = (f"{w.name}-" if test_case == TEST_CASE else f"{test_case}-{w.name}-") + started.strftime('%Y%m%dT%H%M%SZ')
    log = out_dir / f"{stem}.log"
    rep.info(f"scheduler_perf {test_case}/{w.name}: {w.nodes} nodes, {w.size}"
             + (f", feature gates {dict(w.feature_gates)}" if w.feature_gates else ""))
    base: dict[str, Any] = {
        "format_version": FORMAT_VERSION, "kwokbench_version": __version__, "kubernetes": perf.version,
        "host": host, "host_fingerprint": host_fingerprint(host), "measured_at": started.isoformat(),
        "test_case": test_case, "workload": w.name,
        "params": {"nodes": w.nodes, "init_pods": w.init_pods, "pods": w.pods,
                   **({"fill": w.fill, "duration_seconds": w.duration_seconds, "in_flight": w.in_flight}
                      if w.duration_seconds else {})},
        "feature_gates": dict(w.feature_gates), "label_filter": w.label_filter,
        "requested": {"nodes": nodes, "pods": pods}, "log": str(log),
    }
    path = out_dir / f"{stem}.json"
    results: list[RunFigures] = []
    doc: dict[str, Any] = {}
    for k in range(runs):
        with rep.status(f"scheduler_perf {w.name} run {k + 1}/{runs} (at most {timeout:.0f}s; log: {log})") as upd:
            results.append(run_workload(perf.binary, perf.package_dir, w, etcd.path.parent, timeout, log, upd,
                                        perf.env, out_dir / "raw" / f"{stem}-{k + 1}.json"))
        last = results[-1]
        rep.info(f"  run {k + 1}: {last.pods_per_second:.1f} pods/s (SchedulingThroughput average "
                 f"{last.figures['average']:.1f}; {last.wall_seconds:.0f}s)" + (f"; {last.note}" if last.note else ""))
        doc = {**base, **_aggregate(results)}
        # after every run: an interrupted series keeps the runs it finished
        _atomic_write(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path, doc


def _aggregate(results: Sequence[RunFigures]) -> dict[str, Any]:
    figures = [r.pods_per_second for r in results]
    median = statistics.median(figures)
    return {"runs": [{"pods_per_second": r.pods_per_second, **r.figures, "wall_seconds": r.wall_seconds,
                      "exit_code": r.exit_code, "note": r.note} for r in results],
            "pods_per_second": median,
            "spread": {"min": min(figures), "max": max(figures),
                       "relative_range": (max(figures) - min(figures)) / median} if len(figures) > 1 else None,
            "wall_seconds": sum(r.wall_seconds for r in results)}


def bench_args(w: PerfWorkload, data_dir: Path, timeout: float) -> list[str]:
    """The test binary's flags for one workload: benchmarks only (``-test.run=^$``), one iteration."""
    return ["-test.run=^$", f"-test.bench=^BenchmarkPerfScheduling$/^{w.test_case}$/^{re.escape(w.name)}$",
            "-test.benchtime=1x", "-test.count=1", f"-test.timeout={int(timeout) + 60}s",
            f"-perf-scheduling-label-filter={w.label_filter}", f"-data-items-dir={data_dir}"]


def run_workload(binary: Path, package_dir: Path, w: PerfWorkload, etcd_dir: Path, timeout: float, log: Path,
                 update: Any = None, extra_env: Mapping[str, str] | None = None,
                 keep: Path | None = None) -> RunFigures:
    """One scheduler_perf run in a process group of its own, bounded by ``timeout``: on a timeout, an
    error or Ctrl-C the whole group (the test binary and the etcd it started) is stopped and the
    temporary directory (etcd's data, the data items) removed. ``keep``: where the raw data items go."""
    tmp = Path(tempfile.mkdtemp(prefix="kwokbench-ceiling-"))
    env = {k: v for k, v in os.environ.items() if k not in ("ARTIFACTS", "KUBE_INTEGRATION_ETCD_URL")}
    # scheduler_perf finds etcd on PATH; etcd's data dir and the test's own log go under TMPDIR
    env.update(PATH=f"{etcd_dir}{os.pathsep}{env.get('PATH', '')}", TMPDIR=str(tmp), **(extra_env or {}))
    cmd = [str(binary), *bench_args(w, tmp / "data", timeout)]
    t0 = time.monotonic()
    proc: subprocess.Popen[bytes] | None = None
    try:
        with log.open("ab") as logf:
            logf.write(("$ " + " ".join(cmd) + "\n").encode())
            logf.flush()
            try:
                proc = subprocess.Popen(cmd, cwd=package_dir, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as e:
                raise ToolchainError(f"cannot run {binary}: {e}") from e
            deadline = t0 + timeout
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    _stop_group(proc)
                    raise ClusterError(f"scheduler_perf {w.name} did not finish within {timeout:.0f}s; it and its "
                                       f"etcd were stopped (log: {log})")
                if update is not None:
                    update(f"{time.monotonic() - t0:.0f}s")
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(1.0)
        wall = time.monotonic() - t0
        figures = None
        for f in sorted((tmp / "data").glob("*.json")):
            with contextlib.suppress(OSError, orjson.JSONDecodeError, AttributeError):
                figures = figures or throughput_figures(orjson.loads(f.read_bytes()), w.pods)
            if keep is not None:  # raw first: every figure can be derived again from it
                keep.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, keep)
        if figures is None or "average" not in figures:
            what = f"failed with exit {proc.returncode}" if proc.returncode else "measured no SchedulingThroughput"
            raise ClusterError(f"scheduler_perf {w.name} {what} (log: {log}); last lines:\n  "
                               + "\n  ".join(_tail(log)))
        # the figures are written even when the test fails, e.g. below the workload's upstream threshold
        note = f"the test exited {proc.returncode} (see the log); its figures are kept" if proc.returncode else ""
        return RunFigures(figures, wall, int(proc.returncode or 0), note)
    finally:
        if proc is not None:
            _stop_group(proc)
        _stop_strays(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def _stop_group(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL, to the run's process group. Only while its leader is not reaped: until
    then its pid, hence the group id, cannot belong to anyone else."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _stop_strays(tmp: Path) -> None:
    """An etcd whose data dir is in this run's temporary directory, left behind by a test binary that
    exited without stopping it; identified by its own command line, never by a bare pid."""
    import psutil

    for p in psutil.process_iter(["cmdline"]):
        argv = p.info.get("cmdline") or []
        if any(Path(a).name == "etcd" for a in argv[:2]) and any(a.startswith(str(tmp)) for a in argv):
            with contextlib.suppress(psutil.Error):
                p.kill()


def stop_orphans(tmp: Path | None = None) -> list[str]:
    """Leftovers of a ceiling run whose kwokbench was killed (``kill -9``: no ``finally`` ran): an etcd with
    its data in a ``kwokbench-ceiling-*`` temporary directory whose test binary is gone, and that
    directory. An etcd whose test binary still runs (another ceiling in progress) is left alone."""
    import psutil

    root, stopped, killed = tmp or Path(tempfile.gettempdir()), [], []
    for p in psutil.process_iter(["cmdline", "ppid"]):
        argv = p.info.get("cmdline") or []
        dirs = [a for a in argv if a.startswith(str(root / "kwokbench-ceiling-"))]
        if not dirs or not any(Path(a).name == "etcd" for a in argv[:2]):
            continue
        with contextlib.suppress(psutil.Error):
            parent = psutil.Process(p.info["ppid"]) if p.info.get("ppid", 1) > 1 else None
            if parent is None or not parent.exe().endswith(".test"):
                p.kill()
                killed.append(p)
                stopped.append(f"etcd (pid {p.pid}, data in {dirs[0]})")
    psutil.wait_procs(killed, timeout=5)  # gone before its directory is looked at
    for d in root.glob("kwokbench-ceiling-*"):  # not a fresh one: its run may be about to start its binary
        with contextlib.suppress(OSError):
            if time.time() - d.stat().st_mtime > 60 and not any(
                    d.name in " ".join(p.info.get("cmdline") or []) for p in psutil.process_iter(["cmdline"])):
                shutil.rmtree(d, ignore_errors=True)
    return stopped


def _tail(log: Path, n: int = 15) -> list[str]:
    try:
        with log.open(errors="replace") as f:
            return [line.rstrip()[:300] for line in deque(f, maxlen=n)]
    except OSError:
        return []


def result_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """A stored ceiling as rows of text: each run's figures, the median and the spread."""
    p = doc["params"]
    size = PerfWorkload(doc["workload"], p["nodes"], p["pods"], p["init_pods"], test_case=doc["test_case"],
                        duration_seconds=p.get("duration_seconds") or 0.0, in_flight=p.get("in_flight", 10)).size
    rows = [["workload", f"{doc['test_case']}/{doc['workload']} ({p['nodes']} nodes, {size})"],
            ["kubernetes / host", f"{doc['kubernetes']} / {doc['host_fingerprint']}"]]
    for i, r in enumerate(doc["runs"], 1):
        rows.append([f"run {i}: pods/s; SchedulingThroughput average / p50 / p90 / p99",
                     f"{r['pods_per_second']:.1f}; " + " / ".join(f"{r[k]:.1f}" if r.get(k) is not None else "-"
                                                                  for k in ("average", "p50", "p90", "p99"))
                     + f" ({r['wall_seconds']:.0f} s)" + (f"; {r['note']}" if r.get("note") else "")])
    rows.append(["ceiling (median of the runs)", f"{doc['pods_per_second']:.1f} pods/s"])
    if doc.get("spread"):
        sp = doc["spread"]
        rows.append(["spread (max − min) / median", f"{sp['relative_range'] * 100:.1f}% "
                     f"({sp['min']:.1f}–{sp['max']:.1f} pods/s)"])
    return rows


def unstable(doc: Mapping[str, Any]) -> str | None:
    """A warning when the runs are further apart than :data:`SPREAD_WARN` (reported, not hidden)."""
    sp = doc.get("spread") or {}
    if sp and sp["relative_range"] > SPREAD_WARN:
        return (f"the {len(doc['runs'])} runs are {sp['relative_range'] * 100:.0f}% apart (more than "
                f"{SPREAD_WARN * 100:.0f}%): the host was busy or noisy; measure again on an idle host")
    return None
