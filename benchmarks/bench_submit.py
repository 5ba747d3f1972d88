"""Submitter accuracy and cost against a real apiserver (QPS limits off, scheduler disabled so only
pod creation is measured), compared in the same run with the official `kubernetes` client driven by
a thread pool on the same open-loop schedule; plus the memory of a 100k-pod timeline.

Prints per offered rate, for both clients, the rates where each happens: offered (the schedule), sent
(a request on the wire: for the kubernetes client, when a pool thread starts the call) and accepted (2xx
answers per second from their completion times, as `kwokbench run` reports them), with accepted/offered,
the median time on the wire, p50/p99 lateness of the pacer, harness CPU ms per created pod
(everything the submitter process spent, from rendering the bodies to the last answer; for kwokbench
also the one-off setup before t0 — TLS context, warm connections — the per-pod cost without it, and,
not in the per-pod figure, the CPU of starting the worker process: interpreter and imports),
for kwokbench's submitter and for the kubernetes client, and their CPU ratio.
Targets (issue 3): accepted within 2% of offered while the apiserver keeps up; <= 0.3 ms CPU per pod;
a 100k-pod timeline in < 1 GiB RSS.

    .venv/bin/python benchmarks/bench_submit.py [--rates 50,200,500,1000,2000] [--seconds 10] [--repeat 1]
    .venv/bin/python benchmarks/bench_submit.py --repeat 3 --data docs/results/data/submit-DATE.json

``--data FILE`` keeps every measurement's row (rate, repetition, client and its figures) and the timeline's memory
with the command, this checkout's commit, the day and the host; the results pages quote it through this script's own
functions (:func:`accepted`, :func:`cpu`, :func:`client_cpu`, ...), so the page and the script print the same figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import psutil
from stored import here, ranged, write  # a sibling: benchmarks/ is on a script's path

from kwokbench.load.submitter import Submission, SubmitJob
from kwokbench.manifests import ManifestFactory, resolve_template

if TYPE_CHECKING:
    from kwokbench.cluster import ClusterInfo

# Heavier modules (the cluster lifecycle, pandas, aiohttp) are imported where they are used: the
# submitter's worker process is spawned, and re-runs this file's top level as its main module, so
# what is imported here is charged to the worker's start, which a real `kwokbench run` does not pay.


def make_namespace(info: ClusterInfo, ns: str) -> None:
    from kwokbench.cluster.api import Api

    async def go() -> None:
        async with Api(info.credentials()) as api:
            await api.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": ns}}, ok=(201, 409))
            for _ in range(100):
                st, _ = await api.raw("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")
                if st == 200:
                    return
                await asyncio.sleep(0.1)
    asyncio.run(go())


def settle(limit: float = 30.0, busy: float = 25.0) -> None:
    """Wait (up to ``limit`` s) for the host to go quiet: the apiserver is still digesting the previous
    run for a while, and on 2 cores that inflates the CPU time the next measurement is charged."""
    end = time.monotonic() + limit
    while psutil.cpu_percent(interval=1.0) > busy and time.monotonic() < end:
        pass


def _rates(scheduled: np.ndarray, dispatched: np.ndarray, sent: np.ndarray, answered: np.ndarray,
           status: np.ndarray) -> dict[str, float]:
    """Offered, sent and accepted rates over the whole phase, as kwokbench's summary computes them."""
    import pandas as pd

    from kwokbench.figures.acceptance import phase_rates

    r = phase_rates(pd.DataFrame({"scheduled": scheduled, "dispatched": dispatched, "sent": sent,
                                  "latency": answered - dispatched, "status": status}))
    w = r["whole"]
    return {"offered": w["offered"], "sent": w["sent"] or float("nan"), "accepted": w["accepted"] or 0.0,
            "wire_p50": r["wire_seconds"]["p50"] or float("nan")}


def kwokbench_submit(info: ClusterInfo, rate: float, offsets: np.ndarray, ns: str) -> dict[str, float]:
    from kwokbench.load.pacer import connection_cap
    from kwokbench.scenario import QpsArrival

    f = ManifestFactory(resolve_template("pod"), {}, f"kb-{int(rate)}")
    job = SubmitJob(info.credentials(), f.namespaced_path(ns), f, offsets, t0=time.time() + 1.5,
                    connections=connection_cap(QpsArrival(qps=rate)), deadline=60)
    sub = Submission(job, 1)
    log = sub.result(timeout=len(offsets) / rate + 90)
    ok = int((log.status == 201).sum())
    late = log.dispatched - log.scheduled
    return {**_rates(log.scheduled, log.dispatched, log.sent, log.dispatched + log.latency, log.status), "ok": ok,
            "late_p50": float(np.nanpercentile(late, 50)), "late_p99": float(np.nanpercentile(late, 99)),
            "cpu_ms_per_pod": log.cpu_seconds * 1000 / max(ok, 1),
            "setup_ms": log.setup_cpu_seconds * 1000, "start_ms": log.start_cpu_seconds * 1000,
            "steady_ms_per_pod": (log.cpu_seconds - log.setup_cpu_seconds) * 1000 / max(ok, 1)}


def kubernetes_client_submit(info: ClusterInfo, rate: float, offsets: np.ndarray, ns: str,
                             threads: int = 64) -> dict[str, float]:
    """The official client in a thread pool on the same schedule: dispatched when handed to the pool, sent
    when a thread starts the call, answered when it returns."""
    import kubernetes

    n = len(offsets)
    cfg = kubernetes.client.Configuration()
    cfg.host = info.server
    cfg.ssl_ca_cert = str(info.pki / "ca.crt")
    cfg.cert_file, cfg.key_file = str(info.pki / "admin.crt"), str(info.pki / "admin.key")
    cfg.connection_pool_maxsize = threads
    api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(cfg))
    f = ManifestFactory(resolve_template("pod"), {}, f"k8s-{int(rate)}")
    bodies = [orjson.loads(f.body(i)) for i in range(n)]
    dispatched, sent, answered = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    status = np.zeros(n, dtype=np.int32)
    lock = threading.Lock()

    def one(i: int) -> None:
        sent[i] = time.time()
        try:
            resp = api.create_namespaced_pod(ns, bodies[i], _preload_content=False)
            code = int(getattr(resp, "status"))  # noqa: B009 (an urllib3 response, not the typed V1Pod)
        except kubernetes.client.ApiException as e:
            code = e.status
        with lock:
            status[i], answered[i] = code, time.time()

    cpu0 = time.process_time()
    t0 = time.time() + 0.5
    with ThreadPoolExecutor(threads) as pool:
        for i in range(n):
            delay = t0 + offsets[i] - time.time()
            if delay > 0:
                time.sleep(delay)
            dispatched[i] = time.time()
            pool.submit(one, i)
    cpu = time.process_time() - cpu0
    ok = int((status == 201).sum())
    late = dispatched - (t0 + offsets)
    return {**_rates(t0 + offsets, dispatched, sent, answered, status), "ok": ok,
            "late_p50": float(np.percentile(late, 50)), "late_p99": float(np.percentile(late, 99)),
            "cpu_ms_per_pod": cpu * 1000 / max(ok, 1)}


def timeline_rss(n: int = 100_000) -> tuple[float, float]:
    """MiB of peak RSS growth while a Timeline holds n pods fed created → scheduled → running, and the peak."""
    from kwokbench.load.watcher import Timeline

    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tl = Timeline(["w"])
    t = time.time()
    for i in range(n):
        pod: dict[str, Any] = {"metadata": {"namespace": "default", "name": f"w-{i}", "uid": f"{i:032x}",
                            "labels": {"kwokbench.io/workload": "w", "kwokbench.io/run": "abc"},
                            "resourceVersion": str(i)},
               "spec": {"containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]},
               "status": {"phase": "Pending"}}
        tl.handle("ADDED", pod, t)
        pod["spec"]["nodeName"] = f"kb-cpu-{i % 5000}"
        tl.handle("MODIFIED", pod, t + 0.1)
        pod["status"]["phase"] = "Running"
        tl.handle("MODIFIED", pod, t + 0.2)
    with tempfile.TemporaryDirectory() as d:
        tl.frame().to_parquet(Path(d) / "pods.parquet")
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert len(tl.pods) == n
    return after - before, after


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="50,200,500,1000,2000")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=1,
                    help="run every rate this many times (CPU cost varies on a busy host)")
    ap.add_argument("--data", type=Path, help="write every measurement's row, the command, commit, day and host here "
                                              "(JSON)")
    args = ap.parse_args()
    from kwokbench.cluster import ClusterOptions, Kwokctl, bring_up
    from kwokbench.load.pacer import schedule
    from kwokbench.scenario import QpsArrival
    from kwokbench.toolchain import Toolchain

    rates = [float(r) for r in args.rates.split(",")]
    tc = Toolchain()
    tc.install("auto")
    grew, peak = timeline_rss()
    print(f"timeline of 100000 pods: +{grew:.0f} MiB RSS (process peak {peak:.0f} MiB)")
    rows: dict[str, list[dict[str, Any]]] = {"kwokbench": [], "kubernetes": []}
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as home:
        k = Kwokctl(tc, Path(home))
        # no scheduler: measure pod creation alone
        info = bring_up(k, ClusterOptions(name="bench-submit", disable=["kube-scheduler"]), []).cluster
        try:
            print(f"{'offered':>7} {'client':<12} {'sent':>8} {'accepted':>9} {'acc/off':>7} {'wire p50':>9} "
                  f"{'late p50':>9} {'late p99':>9} {'ok':>6} {'cpu ms/pod':>10} {'setup ms':>9} {'w/o setup':>9} "
                  f"{'start ms':>9}")
            for rep in range(args.repeat):
                for rate in rates:
                    offsets = schedule(QpsArrival(qps=rate), int(rate * args.seconds))  # the same for both
                    for label, fn in (("kwokbench", kwokbench_submit), ("kubernetes", kubernetes_client_submit)):
                        ns = f"{label}-{int(rate)}-{rep}"
                        make_namespace(info, ns)
                        settle()
                        r = fn(info, rate, offsets, ns)
                        rows[label].append({"rate": rate, "repeat": rep, **r})
                        # the one-off TLS/connection setup before t0 is known for kwokbench only (the
                        # kubernetes client connects lazily, inside its run)
                        setup = (f"{r['setup_ms']:>9.1f} {r['steady_ms_per_pod']:>9.3f} {r['start_ms']:>9.0f}"
                                 if "setup_ms" in r else f"{'-':>9} {'-':>9} {'-':>9}")
                        print(f"{r['offered']:>7.0f} {label:<12} {r['sent']:>8.1f} {r['accepted']:>9.1f} "
                              f"{r['accepted'] / r['offered']:>7.3f} {r['wire_p50'] * 1000:>7.1f}ms "
                              f"{r['late_p50'] * 1000:>7.1f}ms {r['late_p99'] * 1000:>7.1f}ms {r['ok']:>6} "
                              f"{r['cpu_ms_per_pod']:>10.3f} {setup}", flush=True)
        finally:
            k.delete("bench-submit")
    doc = {"runs": rows, "timeline": {"pods": 100_000, "grew_mib": grew, "peak_mib": peak}}
    if args.data:
        options = f"--rates {args.rates} --seconds {args.seconds:g} --repeat {args.repeat}"
        write(args.data, {**here("every offered rate's measurement of kwokbench's submitter and of the kubernetes "
                                 "client on one apiserver (benchmarks/bench_submit.py)", "bench_submit.py", options),
                          **doc})
    print()
    print(markdown(doc))


def _by_rate(doc: dict[str, Any], client: str, key: str) -> dict[float, list[float]]:
    """``key`` of ``client``'s measurements, by offered rate (highest first), NaN left out."""
    out: dict[float, list[float]] = {}
    for r in doc["runs"][client]:
        v = r["accepted"] / r["offered"] if key == "ratio" else r.get(key)
        if v is not None and v == v:
            out.setdefault(float(r["rate"]), []).append(float(v))
    return dict(sorted(out.items(), reverse=True))


def _mid(xs: list[float], fmt: str, scale: float = 1.0) -> str:
    """The median of ``xs`` and, where the repetitions differ, their range: ``0.091 [0.091–0.095]``."""
    m, lo, hi = (format(scale * x, fmt) for x in (float(np.median(xs)), min(xs), max(xs)))
    return m if lo == hi else f"{m} [{lo}–{hi}]"


def accepted(doc: dict[str, Any], client: str) -> str:
    """Accepted over offered at each rate, lowest rate first, medians: ``1.000, 1.000, 0.998``."""
    return ", ".join(format(float(np.median(v)), ".3f") for v in reversed(_by_rate(doc, client, "ratio").values()))


def rates(doc: dict[str, Any]) -> str:
    """The offered rates, lowest first: ``50, 200, 500``."""
    return ", ".join(f"{r:g}" for r in reversed(_by_rate(doc, "kwokbench", "ratio")))


def wire(doc: dict[str, Any], client: str, rate: float) -> str:
    """The median time on the wire at ``rate``: ``64 ms``."""
    return f"{float(np.median(_by_rate(doc, client, 'wire_p50')[float(rate)])) * 1000:.0f} ms"


def sent(doc: dict[str, Any], client: str, above: float) -> str:
    """The range of requests per second ``client`` put on the wire at offered rates above ``above``: ``220–320``."""
    return ranged([x for r, xs in _by_rate(doc, client, "sent").items() if r > above for x in xs], ".0f")


def cpu(doc: dict[str, Any]) -> str:
    """kwokbench's CPU per created pod at each rate, median [range]: ``0.091 [0.091–0.095] ms at 2000/s, …``."""
    return ", ".join(f"{_mid(v, '.3f')} {'ms ' if i == 0 else ''}at {r:g}/s"
                     for i, (r, v) in enumerate(_by_rate(doc, "kwokbench", "cpu_ms_per_pod").items()))


def setup(doc: dict[str, Any]) -> str:
    """The one-off setup before t0 and the worker's start, ranges: ``9–13 ms``, ``0.26–0.31 s``."""
    s = [x for v in _by_rate(doc, "kwokbench", "setup_ms").values() for x in v]
    w = [x for v in _by_rate(doc, "kwokbench", "start_ms").values() for x in v]
    return (f"one-off setup before `t0` {ranged(s, '.0f')} ms, and starting the worker process "
            f"{ranged(w, '.2f', 0.001)} s")


def client_cpu(doc: dict[str, Any]) -> str:
    """The kubernetes client's CPU per pod (range) and how many times kwokbench's, at the lowest and highest rate:
    ``4.3–4.9 ms, 19x (50/s) to 54x (2000/s) more``."""
    theirs, ours = _by_rate(doc, "kubernetes", "cpu_ms_per_pod"), _by_rate(doc, "kwokbench", "cpu_ms_per_pod")
    x = {r: float(np.median(theirs[r])) / float(np.median(ours[r])) for r in theirs}
    lo, hi = min(x), max(x)
    return (f"{ranged([v for vs in theirs.values() for v in vs], '.1f')} ms, {x[lo]:.0f}x ({lo:g}/s) to "
            f"{x[hi]:.0f}x ({hi:g}/s) more")


def lateness(doc: dict[str, Any]) -> str:
    """kwokbench's send lateness over every measurement: ``p50 0.4–0.7 ms, p99 ≤ 7 ms``."""
    p50 = [x for v in _by_rate(doc, "kwokbench", "late_p50").values() for x in v]
    p99 = [x for v in _by_rate(doc, "kwokbench", "late_p99").values() for x in v]
    return f"p50 {ranged(p50, '.1f', 1000)} ms, p99 ≤ {1000 * max(p99):.0f} ms"


def timeline(doc: dict[str, Any]) -> str:
    """What a 100k-pod timeline added to the process's peak RSS: ``+115 MiB``."""
    return f"+{doc['timeline']['grew_mib']:.0f} MiB"


def markdown(doc: dict[str, Any]) -> str:
    """Per offered rate and client: accepted/offered, requests sent per second, time on the wire, CPU per created pod
    (medians over the repetitions, their range in brackets)."""
    out = ["| offered | client | accepted / offered | sent per s | on the wire p50 | CPU per pod |", "|---" * 6 + "|"]
    for client in ("kwokbench", "kubernetes"):
        ratio, sends = _by_rate(doc, client, "ratio"), _by_rate(doc, client, "sent")
        wires, cpus = _by_rate(doc, client, "wire_p50"), _by_rate(doc, client, "cpu_ms_per_pod")
        for r in reversed(ratio):
            out.append(f"| {r:g}/s | {client} | {_mid(ratio[r], '.3f')} | {_mid(sends[r], '.0f')} | "
                       f"{_mid(wires[r], '.1f', 1000)} ms | {_mid(cpus[r], '.3f')} ms |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
