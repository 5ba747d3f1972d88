"""Schedulers kwokbench starts itself, next to the control plane kwokctl runs.

A scheduler kind that starts its own process describes it as a :class:`Launch` (an external binary's argv with
placeholders filled, or, when a scenario runs several variants at once (``concurrent_schedulers``), a
kube-scheduler with its own profile name: :func:`plan`), and this module runs it. A started scheduler is a
process of the cluster like kwokctl's: its pid (and start time) in ``<cluster>/pids/<component>.pid``, its
output in ``<cluster>/logs/<component>.log``, so ``down``, the watchdog, the scraper and the CPU accounting
find it. It starts after the control
plane (and its manifests: CRDs first, waited for), and is ready when ``ready_path`` answers 200 — or,
without one, when it stayed up for 3 s. A command that exits, or a scheduler that is not ready in
time, is one ClusterError naming the log and its last line; the process is stopped first.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import psutil
import yaml

from kwokbench.cluster import processes
from kwokbench.cluster.api import Api
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, free_port, scheduler_config_document
from kwokbench.cluster.objects import create_crds, yaml_documents
from kwokbench.errors import ClusterError, ScenarioError
from kwokbench.manifests import collection_path

SETTLE_SECONDS = 3.0
"""Without a readiness path, a scheduler is ready once its process stayed up this long."""


def component_name(variant: str) -> str:
    """pid-file, log and metrics name of a variant's process when several run at once."""
    return f"scheduler-{variant}"


@dataclass
class Launch:
    """What to start for one variant (pure data; :func:`start` runs it)."""

    variant: str
    component: str
    argv: list[str]
    workdir: Path
    scheduler_name: str
    metrics_url: str | None
    ready_url: str | None
    https: bool
    ready_timeout: float
    version_argv: list[str]


def stand_in_config(copts: ClusterOptions, kubeconfig: Path, scheduler_name: str) -> dict[str, Any]:
    """The KubeSchedulerConfiguration of a kube-scheduler kwokbench starts itself: the variant's document
    (client limits, extenders, plugin args as for kwokctl's scheduler), its own kubeconfig, leader
    election off, and every profile named ``scheduler_name`` (one profile; several must already carry
    distinct names, one of them this)."""
    doc = scheduler_config_document(copts)
    doc["clientConnection"] = {**(doc.get("clientConnection") or {}), "kubeconfig": str(kubeconfig)}
    doc["leaderElection"] = {"leaderElect": False}
    profiles = doc.get("profiles") or [{}]
    if len(profiles) == 1:
        profiles = [{**profiles[0], "schedulerName": scheduler_name}]
    elif scheduler_name not in {p.get("schedulerName", "default-scheduler") for p in profiles}:
        raise ScenarioError(f"scheduler config has {len(profiles)} profiles and none is named {scheduler_name!r}")
    doc["profiles"] = profiles
    return doc


def write_config(copts: ClusterOptions, workdir: Path, kubeconfig: Path, scheduler_name: str) -> Path:
    """The configuration file of a kube-scheduler started here (:func:`stand_in_config`), in its workdir."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "config.yaml"
    config.write_text(yaml.safe_dump(stand_in_config(copts, kubeconfig, scheduler_name), sort_keys=False))
    return config


def plan(variant: str, scheduler_name: str, info: ClusterInfo, copts: ClusterOptions, component: str,
         kube_scheduler: Path, scheduler_binary: Path | None, extra_args: list[str], ready_timeout: float) -> Launch:
    """How to start a kube-scheduler (stock, scheduler-plugins, a plugin build) for ``variant`` on the cluster
    ``info``: a rendered configuration and a free secure port."""
    workdir = info.dir / "schedulers" / variant
    config = write_config(copts, workdir, info.kubeconfig, scheduler_name)
    port = free_port()
    binary = str(scheduler_binary or kube_scheduler)
    argv = [binary, f"--config={config}", f"--secure-port={port}", "--bind-address=127.0.0.1",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof,/debug/pprof/*",
            *[f"--{a}" for a in extra_args]]
    base = f"https://127.0.0.1:{port}"
    return Launch(variant, component, argv, workdir, scheduler_name, metrics_url=f"{base}/metrics",
                  ready_url=f"{base}/healthz", https=True, ready_timeout=ready_timeout,
                  version_argv=[binary, "--version"])


def version(argv: list[str], cwd: Path, timeout: float = 10.0) -> str:
    """First line the version command prints, or ``unknown (why)``: never fails the run."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                             cwd=cwd)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({type(e).__name__}: {e})"
    line = next((ln.strip() for ln in (res.stdout + "\n" + res.stderr).splitlines() if ln.strip()), "")
    return line[:200] if res.returncode == 0 and line else f"unknown (exit {res.returncode}: {line[:120]})"



def _answers(url: str, creds: Credentials, https: bool) -> bool:
    ctx = None
    if https:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        with contextlib.suppress(OSError, ssl.SSLError):
            ctx.load_cert_chain(str(creds.cert_file), str(creds.key_file))
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as r:
            return bool(r.status == 200)
    except (OSError, ValueError):
        return False


def start(launch: Launch, info: ClusterInfo) -> dict[str, Any]:
    """Start the scheduler and wait until it is ready; returns its record for the run's meta.

    On failure the process is stopped and a one-line ClusterError says what happened."""
    log = info.dir / "logs" / f"{launch.component}.log"
    ver = version(launch.version_argv, launch.workdir)
    t0 = time.time()
    try:
        proc = processes.spawn(info.dir, launch.component, launch.argv, launch.workdir)
    except OSError as e:
        raise ClusterError(f"scheduler {launch.variant}: cannot start {launch.argv[0]!r}: "
                           f"{e.strerror or e}") from e
    creds = info.credentials()
    deadline = t0 + launch.ready_timeout
    ready = None
    while time.time() < deadline:
        code = proc.poll()
        if code is not None:
            raise ClusterError(f"scheduler {launch.variant}: its command exited with code {code} after "
                               f"{time.time() - t0:.1f}s: {processes.telling_line(log)} (log: {log})")
        if launch.ready_url is not None:
            if _answers(launch.ready_url, creds, launch.https):
                ready = time.time()
                break
        elif time.time() - t0 >= SETTLE_SECONDS:
            ready = time.time()
            break
        time.sleep(0.2)
    if ready is None:
        stop(info, launch.component)
        what = f"{launch.ready_url} did not answer 200" if launch.ready_url else "it did not stay up"
        raise ClusterError(f"scheduler {launch.variant} was not ready within {launch.ready_timeout:g}s ({what}); "
                           f"last log line: {processes.telling_line(log)} (log: {log})")
    return {"variant": launch.variant, "component": launch.component, "scheduler_name": launch.scheduler_name,
            "pid": proc.pid, "argv": launch.argv, "version": ver, "metrics_url": launch.metrics_url,
            "ready_seconds": ready - t0, "log": str(log)}


def endpoints_of(record: dict[str, Any] | None, info: ClusterInfo | None) -> list[Endpoint]:
    """The metrics endpoint of a scheduler started here (none without a metrics URL): https ones are asked
    with the admin client certificate, the serving certificate not verified."""
    if record is None or info is None or not record.get("metrics_url"):
        return []
    url = record["metrics_url"]
    creds = info.credentials()
    insecure = Credentials("", None, creds.cert_file, creds.key_file, insecure=True)
    return [Endpoint(record["component"], url, insecure if url.startswith("https") else None,
                     pprof=record.get("pprof_url"))]


def stop(info: ClusterInfo, component: str) -> list[str]:
    """Stop one started scheduler (checked to still be that process); the cluster's delete does it too."""
    known, why = processes.from_pid_file(info.dir, component)
    notes = [why] if why else []
    if known is not None:
        notes += processes.stop([known], info.dir)
    return notes


def alive(info: ClusterInfo, component: str) -> bool:
    known, _ = processes.from_pid_file(info.dir, component)
    if known is None:
        return False
    p, _ = known.process(info.dir)
    with contextlib.suppress(psutil.Error):
        return p is not None and p.status() != psutil.STATUS_ZOMBIE
    return False


async def apply_manifests(creds: Credentials, files: list[Path]) -> list[str]:
    """CRDs first (until established), then every other object (an existing one is kept)."""
    docs = []
    for f in files:
        try:
            docs += yaml_documents(f)
        except (OSError, yaml.YAMLError) as e:
            raise ScenarioError(f"manifest {f}: {e}") from e
    crds = [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
    names = await create_crds(creds, crds) if crds else []
    async with Api(creds) as api:
        for d in docs:
            if d.get("kind") == "CustomResourceDefinition":
                continue
            try:
                ns = (d.get("metadata") or {}).get("namespace") or "default"
                path = collection_path(d["apiVersion"], d["kind"], None if d["kind"] in _CLUSTER_SCOPED else ns)
            except (KeyError, TypeError) as e:
                raise ScenarioError(f"manifest object without apiVersion/kind: {str(d)[:120]}") from e
            status, body = await api.raw("POST", path, orjson.dumps(d))
            if status not in (201, 409):
                raise ClusterError(f"creating {d['kind']} {(d.get('metadata') or {}).get('name')}: HTTP {status} "
                                   f"{body[:200]!r}")
            names.append(f"{d['kind']}/{(d.get('metadata') or {}).get('name')}")
    return names


_CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "StorageClass",
                   "CustomResourceDefinition", "Node"}


def start_all(launches: list[Launch], info: ClusterInfo, manifests: list[Path]) -> list[dict[str, Any]]:
    """Apply the manifests, then start each scheduler in turn; if one fails, those already started are
    stopped before the error goes up."""
    if manifests:
        asyncio.run(apply_manifests(info.credentials(), manifests))
    started: list[dict[str, Any]] = []
    try:
        for launch in launches:
            started.append(start(launch, info))
    except BaseException:
        for s in started:
            stop(info, s["component"])
        raise
    return started
