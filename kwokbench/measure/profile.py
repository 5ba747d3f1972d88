"""CPU profiles of control-plane components over the measured window (``kwokbench run --profile NAME``).

Each named component's ``/debug/pprof/profile?seconds=N`` is fetched, from the first phase on, on the port
and with the credentials its ``/metrics`` is scraped with (:func:`kwokbench.measure.scrape.endpoints`):
kube-scheduler, kube-controller-manager and kube-apiserver serve pprof with profiling on by default, the
admin client certificate is authorised for it. A scheduler kwokbench started itself (``binary: external``,
or several side by side: ``scheduler`` then profiles each) is asked on its metrics port; one that serves
no pprof there gets its error recorded. Each profile begins when the first phase's first object was
created (:attr:`RunContext.first_created <kwokbench.measure.RunContext.first_created>`), not when the
measurements started: a run slow to begin submitting (its submit workers starting on a loaded host) would
otherwise profile an idle scheduler. N is the first phase's expected duration plus :data:`TAIL_SECONDS`,
at most :data:`MAX_SECONDS`. The profile is stored as it came,
``profiles/<component>.pb.gz`` (read it with ``go tool pprof``); ``profiles/profiles.json`` says what was
asked, when each profile began and what failed. The analysis reads the top functions from it
(:mod:`kwokbench.figures.pprof`).

The kwok controller serves ``/debug/pprof/`` only for named runtime profiles, not the CPU profile: it is
not offered.
"""

from __future__ import annotations

import http.client
import math
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

from kwokbench.cluster.endpoints import Endpoint
from kwokbench.errors import ScenarioError
from kwokbench.load.pacer import schedule
from kwokbench.measure import RunContext
from kwokbench.measure.scrape import endpoints as scraped_endpoints
from kwokbench.metrics.derive import OWN_PREFIX
from kwokbench.scenario import Scenario
from kwokbench.store import PROFILE_FORMAT_VERSION as FORMAT_VERSION
from kwokbench.store import PROFILE_INDEX as INDEX
from kwokbench.store import PROFILES, RunDir, _atomic_write

TARGETS = {"scheduler": "kube-scheduler", "apiserver": "kube-apiserver",
           "controller-manager": "kube-controller-manager"}
"""``--profile`` names → the component profiled."""
MAX_SECONDS = 30
MIN_SECONDS = 10
TAIL_SECONDS = 2.0
"""After the first phase's last request: the pods of its last seconds being scheduled."""
WAIT_SECONDS = 600.0
"""The longest a profile waits for the first phase's first object (then it records that it never began)."""


def components(names: list[str]) -> list[str]:
    """Component names for ``--profile`` values (short or full names); ScenarioError for anything else."""
    full = {v: v for v in TARGETS.values()} | TARGETS
    unknown = [n for n in names if n not in full]
    if unknown:
        raise ScenarioError(f"--profile {unknown[0]}: not a profiled component (one of: {', '.join(TARGETS)})")
    return list(dict.fromkeys(full[n] for n in names))


def profile_seconds(scenario: Scenario) -> int:
    """The first phase's expected duration plus the tail after it, within [MIN_SECONDS, MAX_SECONDS]."""
    w = scenario.workloads[0]
    offsets = schedule(w.arrival, w.count, scenario.seed)
    duration = float(offsets[-1]) if len(offsets) else 0.0
    return int(min(MAX_SECONDS, max(MIN_SECONDS, math.ceil(duration + TAIL_SECONDS))))


def profile_path(run_dir: Path, component: str) -> Path:
    return run_dir / PROFILES / f"{component}.pb.gz"


def fetch(endpoint: Endpoint, seconds: int) -> bytes:
    """``/debug/pprof/profile`` of the component whose ``/metrics`` is ``endpoint``; blocks ``seconds``."""
    base = endpoint.pprof or endpoint.url.removesuffix("/metrics") + "/debug/pprof"
    u = urllib.parse.urlsplit(base.rstrip("/") + f"/profile?seconds={seconds}")
    timeout = seconds + 30.0
    conn: http.client.HTTPConnection
    if u.scheme == "https":
        ctx = endpoint.creds.ssl_context() if endpoint.creds else None
        conn = http.client.HTTPSConnection(u.hostname or "127.0.0.1", u.port, timeout=timeout, context=ctx)
    else:
        conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=timeout)
    try:
        conn.request("GET", f"{u.path}?{u.query}", headers=endpoint.creds.headers() if endpoint.creds else {})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise OSError(f"HTTP {resp.status}: {body[:200].decode(errors='replace').strip()}")
        return body
    finally:
        conn.close()


class ComponentProfiles:
    name = "CPU profiles"

    def __init__(self, components: list[str]) -> None:
        self.components = list(components)  # resolved per run (below): not the caller's list
        self._threads: list[threading.Thread] = []
        self._results: dict[str, dict[str, Any]] = {}
        self._run_dir: Path | None = None
        self._seconds = 0
        self._started = 0.0
        self._began: dict[str, float] = {}
        self._stopping = threading.Event()
        self._created: threading.Event | None = None

    def start(self, ctx: RunContext) -> None:
        self._run_dir = ctx.run_dir
        self._seconds = profile_seconds(ctx.scenario)
        self._created = ctx.first_created
        endpoints = {e.component: e for e in scraped_endpoints(ctx)}
        # "scheduler" in a run whose schedulers kwokbench started itself, side by side: each of them
        if "kube-scheduler" in self.components and "kube-scheduler" not in endpoints:
            own = [c for c in endpoints if c.startswith(OWN_PREFIX)]
            at = self.components.index("kube-scheduler")
            self.components[at:at + 1] = own or ["kube-scheduler"]
        (ctx.run_dir / PROFILES).mkdir(exist_ok=True)
        self._started = time.time()
        for comp in self.components:
            e = endpoints.get(comp)
            if e is None:
                self._results[comp] = {"error": "not reachable from a client on this cluster"}
                continue
            t = threading.Thread(target=self._one, args=(e,), name=f"kwokbench-profile-{comp}", daemon=True)
            self._threads.append(t)
            t.start()
        ctx.reporter.info(f"profiling {', '.join(self.components)} for {self._seconds} s from the first pod created")

    def _one(self, e: Endpoint) -> None:
        assert self._run_dir is not None and self._created is not None
        deadline = time.monotonic() + WAIT_SECONDS
        while not self._created.wait(0.1):
            if self._stopping.is_set() or time.monotonic() > deadline:
                self._results[e.component] = {"error": "not taken: the first phase created no object"}
                return
        self._began[e.component] = time.time()
        try:
            data = fetch(e, self._seconds)
            _atomic_write(profile_path(self._run_dir, e.component), data)
            self._results[e.component] = {"file": f"{PROFILES}/{e.component}.pb.gz", "bytes": len(data),
                                          "began": self._began[e.component]}
        except (OSError, http.client.HTTPException) as ex:
            self._results[e.component] = {"error": f"{type(ex).__name__}: {ex}"}

    def stop(self) -> None:
        """Waits for the profiles still being taken (at most their length and the request timeout); one
        still waiting for the first object is not taken."""
        if self._created is None or not self._created.is_set():
            self._stopping.set()
        began = max(self._began.values(), default=time.time())
        deadline = began + self._seconds + 35.0
        for t in self._threads:
            t.join(max(0.0, deadline - time.time()))
        if self._run_dir is None:
            return
        results = {c: self._results.get(c, {"error": "still running when the run stopped"}) for c in self.components}
        RunDir(self._run_dir).write_json(f"{PROFILES}/{INDEX}", {
            "format_version": FORMAT_VERSION, "seconds": self._seconds, "started": self._started,
            "profiles": results})

    def collect(self, ctx: RunContext) -> None:
        pass

