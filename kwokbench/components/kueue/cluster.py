"""Kueue as one more process of a kwokctl cluster, without its webhooks.

Kueue admits Jobs into a ClusterQueue's quota; kube-scheduler still places their pods. It normally runs
as a Deployment whose webhooks the apiserver calls through a Service; a kwokctl cluster has no Service
networking, so kwokbench runs the controller as a local process next to the others and installs no
webhook configuration. What the webhooks would have done is done by the manifests instead: a queued
Job is created with ``spec.suspend: true`` and its queue label (the Job webhook's defaulting), and the
ClusterQueue names its ``namespaceSelector`` explicitly.

Kueue starts its webhook server anyway (its readiness probe waits for it): with internal certificate
management off it serves a self-signed pair from ``webhook.certDir`` (:func:`write_certs`) that nobody
dials. Kueue v0.19 then also reads its metrics serving certificate from a path fixed in ``cmd/kueue``,
``/etc/kueue/metrics/certs``: :func:`ensure_metrics_certs` puts a pair there once per host. Internal
certificate management is no way around that: its rotator waits for a Secret mounted by a kubelet and
for CA bundles injected into CRD conversion webhooks, neither of which exists here, and never turns ready.

kwok completes a Job's pods as soon as they run; :func:`delayed_completion_stage` keeps a pod annotated
by :func:`queued_job` Running for a while, so quota stays reserved and the queue has a depth.

The process is started like kwokctl starts the control plane: executed through ``<cluster>/bin/kueue``
(a link to the cached binary), pid and start time in ``<cluster>/pids/kueue.{pid,start}``, output in
``<cluster>/logs/kueue.log``, so ``kwokbench down`` identifies it (:mod:`kwokbench.cluster.processes`)
and stops it with the cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import psutil
import yaml

from kwokbench.cluster import processes, stages
from kwokbench.cluster.api import Api
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.cluster.kwokctl import free_ports
from kwokbench.cluster.objects import apply_crds
from kwokbench.cluster.processes import ComponentProcess
from kwokbench.errors import ClusterError
from kwokbench.manifests import collection_path

COMPONENT = "kueue"
NAMESPACE = "kueue-system"
API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
"""Where ``cmd/kueue`` (v0.19) reads its metrics certificate when internal cert management is off."""

KWOK_NODE_TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
COMPLETE_DELAY_ANNOTATION = "kwokbench.io/complete-after"
"""Pod annotation read by :func:`delayed_completion_stage`: a Go duration (``30s``) the pod runs for."""


# ---- configuration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class KueuePorts:
    """Kueue's listeners, all on 127.0.0.1: several clusters (and their Kueues) share one host."""

    metrics: int
    health: int
    """``/healthz`` and ``/readyz`` (plain HTTP)."""
    webhook: int
    """The webhook server Kueue starts anyway; nothing calls it."""


def render_config(ports: KueuePorts, cert_dir: Path, *, qps: float = -1, burst: int = 10000,
                  frameworks: tuple[str, ...] = ("batch/job",), manage_jobs_without_queue_name: bool = False,
                  pprof_port: int | None = None, feature_gates: dict[str, bool] | None = None,
                  namespace: str = NAMESPACE) -> dict[str, Any]:
    """A Kueue ``Configuration`` (config.kueue.x-k8s.io/v1beta2) for a process outside the cluster.

    ``qps`` < 0 turns the client's rate limiter off (Kueue's own convention), as kwokbench runs every
    component by default; give a positive value to measure with a limited client. ``VisibilityOnDemand``
    is off unless asked for: it starts an aggregated API server on a fixed port that would need
    delegated authentication to be set up."""
    cfg: dict[str, Any] = {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "namespace": namespace,
        "manageJobsWithoutQueueName": manage_jobs_without_queue_name,
        "internalCertManagement": {"enable": False},
        "leaderElection": {"leaderElect": False},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.health}"},
        "metrics": {"bindAddress": f"127.0.0.1:{ports.metrics}"},
        "webhook": {"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)},
        "clientConnection": {"qps": qps, "burst": burst},
        "integrations": {"frameworks": list(frameworks)},
        "featureGates": {"VisibilityOnDemand": False, **(feature_gates or {})},
    }
    if pprof_port is not None:
        cfg["pprofBindAddress"] = f"127.0.0.1:{pprof_port}"
    return cfg


def write_certs(directory: Path, name: str = "kueue") -> tuple[Path, Path]:
    """A self-signed ``tls.crt``/``tls.key`` pair for 127.0.0.1 in ``directory`` (made if missing);
    returns their paths. An existing pair is kept."""
    crt, key = directory / "tls.crt", directory / "tls.key"
    if crt.is_file() and key.is_file():
        return crt, key
    directory.mkdir(parents=True, exist_ok=True)
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ClusterError("Kueue needs a serving certificate and openssl is not on PATH (Debian: apt-get install "
                           "openssl)")
    with tempfile.TemporaryDirectory(prefix=".certs-", dir=directory) as tmp:
        cmd = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
               "-days", "3650", "-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
               "-keyout", f"{tmp}/tls.key", "-out", f"{tmp}/tls.crt"]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        if res.returncode != 0:
            raise ClusterError(f"openssl could not make a certificate for {name}: "
                               f"{(res.stderr.strip().splitlines() or ['no output'])[-1]}")
        os.replace(f"{tmp}/tls.key", key)
        os.replace(f"{tmp}/tls.crt", crt)
    return crt, key


def ensure_metrics_certs(directory: Path = METRICS_CERT_DIR) -> None:
    """The metrics certificate at the path Kueue hard-codes; written once per host, shared by every
    cluster's Kueue (each reads it at start; nothing else uses it)."""
    try:
        write_certs(directory, "kueue-metrics")
    except OSError as e:
        raise ClusterError(f"Kueue reads its metrics certificate from {directory} (fixed in cmd/kueue when "
                           f"internal cert management is off) and it cannot be created: {e.strerror}; create "
                           f"tls.crt and tls.key there once as root") from e


# ---- manifests -----------------------------------------------------------------------------------


def resource_flavor(name: str = "default-flavor", node_labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A ResourceFlavor; ``node_labels`` are injected into admitted pods' nodeSelector by Kueue."""
    spec: dict[str, Any] = {}
    if node_labels:
        spec["nodeLabels"] = dict(node_labels)
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(name: str, flavor: str, quota: dict[str, str | int], *,
                  queueing_strategy: str = "BestEffortFIFO", cohort: str | None = None,
                  namespace_selector: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ClusterQueue with one flavor and a nominal quota per resource (``{"cpu": "8", "memory": "32Gi"}``).

    ``namespace_selector`` defaults to ``{}`` (every namespace): left out, Kueue admits nothing."""
    if not quota:
        raise ValueError("a ClusterQueue needs a quota for at least one resource")
    spec: dict[str, Any] = {
        "namespaceSelector": {} if namespace_selector is None else namespace_selector,
        "queueingStrategy": queueing_strategy,
        "resourceGroups": [{
            "coveredResources": list(quota),
            "flavors": [{"name": flavor,
                         "resources": [{"name": r, "nominalQuota": str(q)} for r, q in quota.items()]}],
        }],
    }
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, cluster_queue_name: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue_name}}


def queued_job(name: str, queue: str, *, parallelism: int = 1, completions: int | None = None,
               cpu: str = "100m", memory: str = "128Mi", namespace: str = "default",
               run_for: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A batch/v1 Job submitted to LocalQueue ``queue``: suspended (Kueue unsuspends it on admission) and
    its pods aimed at kwok's fake nodes. ``run_for`` (a Go duration such as ``20s``) keeps each pod
    Running that long under :func:`delayed_completion_stage`; without it kwok completes Job pods at once."""
    pod_meta: dict[str, Any] = {"labels": {"app": "kwokbench", **(labels or {})}}
    if run_for:
        pod_meta["annotations"] = {COMPLETE_DELAY_ANNOTATION: run_for}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app": "kwokbench", QUEUE_LABEL: queue, **(labels or {})}},
        "spec": {
            "suspend": True,
            "parallelism": parallelism,
            "completions": parallelism if completions is None else completions,
            "backoffLimit": 0,
            "template": {
                "metadata": pod_meta,
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": 0,
                    "tolerations": [KWOK_NODE_TOLERATION],
                    "containers": [{"name": "main", "image": "fake.example/kwokbench:latest",
                                    "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                },
            },
        },
    }


def delayed_completion_stage(name: str = "kwokbench-pod-complete-after") -> dict[str, Any]:
    """A kwok Stage that completes a Job's Running pod after the duration in its
    :data:`COMPLETE_DELAY_ANNOTATION` (kwok's default "fast" stages complete Job pods at once).

    Give it to the kwok controller as a second config file (kwokctl ``--extra-args
    kwok-controller=config=FILE``): the controller then has both pod-complete stages, and among stages
    matching one pod kwok takes only those with a positive weight, so an annotated pod gets this one and
    any other Job pod keeps completing at once."""
    return stages.delay_stage(name, COMPLETE_DELAY_ANNOTATION,
                              [{"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]}],
                              {"statusTemplate": _COMPLETED_STATUS})


_COMPLETED_STATUS = """\
{{ $now := Now }}
containerStatuses:
{{ range $index, $item := .spec.containers }}
- image: {{ $item.image | Quote }}
  name: {{ $item.name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Succeeded
"""


def write_stage_config(path: Path) -> Path:
    """:func:`delayed_completion_stage` as a kwok config file at ``path``."""
    return stages.write_config(path, delayed_completion_stage())


# ---- reading Kueue's objects ---------------------------------------------------------------------


def condition_time(obj: dict[str, Any], kind: str) -> float | None:
    """Epoch seconds of the ``lastTransitionTime`` of ``obj``'s condition ``kind`` while it is True
    (whole seconds: the API stores no more), else None."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True" and c.get("lastTransitionTime"):
            return _epoch(c["lastTransitionTime"])
    return None


def workload_state(wl: dict[str, Any]) -> str:
    """``finished``, ``admitted``, ``reserved`` (quota reserved, admission checks pending) or ``pending``."""
    for kind, state in (("Finished", "finished"), ("Admitted", "admitted"), ("QuotaReserved", "reserved")):
        if condition_time(wl, kind) is not None:
            return state
    return "pending"


def workload_times(wl: dict[str, Any]) -> dict[str, float | None]:
    """When a Workload was created, got quota, was admitted and finished (epoch seconds or None)."""
    created = (wl.get("metadata") or {}).get("creationTimestamp")
    return {"created": _epoch(created) if created else None,
            "quota_reserved": condition_time(wl, "QuotaReserved"),
            "admitted": condition_time(wl, "Admitted"),
            "finished": condition_time(wl, "Finished")}


def queue_depth(cq: dict[str, Any]) -> dict[str, int]:
    """A ClusterQueue's ``pendingWorkloads``, ``reservingWorkloads`` and ``admittedWorkloads``."""
    st = cq.get("status") or {}
    return {k: int(st.get(f"{k}Workloads", 0)) for k in ("pending", "reserving", "admitted")}


def _epoch(ts: str) -> float:
    return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


# ---- the process ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class KueueProcess:
    """A started Kueue: its process (pid and start time, as :mod:`processes` identifies components), where
    it listens and where it writes."""

    process: ComponentProcess
    cluster_dir: Path
    ports: KueuePorts
    log: Path
    config: Path
    started: float
    """Epoch seconds at the start."""
    popen: subprocess.Popen[bytes] | None = field(default=None, compare=False, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def readyz(self) -> str:
        return f"http://127.0.0.1:{self.ports.health}/readyz"


def start_kueue(cluster_dir: Path, kubeconfig: Path, binary: Path, metrics_port: int, *,
                health_port: int | None = None, webhook_port: int | None = None, qps: float = -1,
                burst: int = 10000, frameworks: tuple[str, ...] = ("batch/job",), pprof_port: int | None = None,
                feature_gates: dict[str, bool] | None = None, log_level: int | None = None) -> KueueProcess:
    """Start Kueue for the cluster in ``cluster_dir``, detached (its own session), and return at once
    (see :func:`wait_ready`). The settings are :func:`render_config`'s; ports left out are picked free;
    ``log_level`` is zap's (``2`` logs every admission decision)."""
    if not binary.is_file():
        raise ClusterError(f"no Kueue binary at {binary} (build it with kwokbench.components.kueue.build.build_kueue)")
    picked = iter(free_ports(2))
    ports = KueuePorts(metrics_port, health_port or next(picked), webhook_port or next(picked))
    home = cluster_dir / COMPONENT
    cert_dir = home / "certs"
    write_certs(cert_dir)
    ensure_metrics_certs()
    cfg = home / "config.yaml"
    doc = render_config(ports, cert_dir, qps=qps, burst=burst, frameworks=frameworks, pprof_port=pprof_port,
                        feature_gates=feature_gates)
    cfg.write_text(yaml.safe_dump(doc, sort_keys=False))

    link = cluster_dir / "bin" / COMPONENT  # kwokbench's cleanup knows components by <cluster>/bin/<name>
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp_link = link.with_name(f".{COMPONENT}.tmp")
    tmp_link.unlink(missing_ok=True)
    tmp_link.symlink_to(binary.resolve())
    tmp_link.replace(link)

    log = cluster_dir / "logs" / f"{COMPONENT}.log"
    argv = [str(link), f"--config={cfg}", f"--kubeconfig={kubeconfig}"]
    if log_level is not None:
        argv.append(f"--zap-log-level={log_level}")
    popen = processes.spawn(cluster_dir, COMPONENT, argv, cluster_dir)
    started = time.time()
    create_time: float | None = None
    with contextlib.suppress(psutil.Error):
        create_time = psutil.Process(popen.pid).create_time()
    return KueueProcess(ComponentProcess(COMPONENT, popen.pid, create_time), cluster_dir, ports, log, cfg, started,
                        popen)


def wait_ready(proc: KueueProcess, timeout: float = 120.0) -> float:
    """Wait until Kueue's ``/readyz`` answers 200 and return when (epoch seconds). Its probe only says the
    webhook server listens: controllers may still be syncing, and a ClusterQueue turns Active once Kueue
    has seen its flavor. A ClusterError names the log if Kueue exits, or is stopped and named if it is
    not ready in time."""
    deadline = time.monotonic() + timeout
    while True:
        code = proc.popen.poll() if proc.popen is not None else (None if psutil.pid_exists(proc.pid) else -1)
        if code is not None:
            raise ClusterError(f"kueue exited at start (exit {code}): {last_log_line(proc.log)} (log: {proc.log})")
        with contextlib.suppress(OSError), urllib.request.urlopen(proc.readyz, timeout=2) as r:
            if r.status == 200:
                return time.time()
        if time.monotonic() > deadline:
            stop_kueue(proc)
            raise ClusterError(f"kueue was not ready within {timeout:g}s ({proc.readyz}), stopped: "
                               f"{last_log_line(proc.log)} (log: {proc.log})")
        time.sleep(0.2)


def stop_kueue(proc: KueueProcess, grace: float = 10.0) -> list[str]:
    """Stop Kueue before its cluster goes (SIGTERM, SIGKILL after ``grace``), checked to still be this
    cluster's Kueue first; removes its pid file. Returns a sentence for a process left alone."""
    cluster_dir = proc.cluster_dir
    notes = processes.stop([proc.process], cluster_dir, grace)
    if proc.popen is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(1)  # reap it
    for suffix in (".pid", ".start"):
        (cluster_dir / "pids" / f"{COMPONENT}{suffix}").unlink(missing_ok=True)
    return notes


def log_error(line: str) -> str | None:
    """``msg: error`` of one of Kueue's JSON log lines if it is an error, else None."""
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or doc.get("level") != "error":
        return None
    return f"{doc.get('msg', '')}: {doc.get('error', '')}"[:300]


def last_log_line(log: Path) -> str:
    """The last error Kueue logged, else its last line: the detail of a one-line ClusterError."""
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    if not lines:
        return "nothing logged"
    return next((e for e in map(log_error, reversed(lines[-50:])) if e), lines[-1][:300])


# ---- installing into a cluster -------------------------------------------------------------------


async def install(creds: Credentials, crds: list[Path], timeout: float = 120.0) -> list[str]:
    """Kueue's namespace and CRDs (each served before this returns); returns the CRD names."""
    async with Api(creds) as api:
        status, body = await api.raw("POST", "/api/v1/namespaces", orjson.dumps(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}))
        if status not in (201, 409):
            raise ClusterError(f"creating namespace {NAMESPACE}: HTTP {status} {body[:200]!r}")
    return await apply_crds(creds, crds, timeout)


async def create_objects(creds: Credentials, objs: list[dict[str, Any]]) -> None:
    """Create ``objs`` in order (a flavor before the queue naming it); one that exists is kept."""
    async with Api(creds) as api:
        for o in objs:
            path = collection_path(o["apiVersion"], o["kind"], (o.get("metadata") or {}).get("namespace"))
            status, body = await api.raw("POST", path, orjson.dumps(o))
            if status not in (201, 409):
                raise ClusterError(f"creating {o['kind']} {o['metadata']['name']}: HTTP {status} {body[:300]!r}")


METRICS_READER = "kwokbench-metrics-reader"


def metrics_reader_objects(namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """A ServiceAccount allowed to GET ``/metrics``: Kueue's metrics server authenticates bearer tokens
    only (TokenReview) and authorizes them with a SubjectAccessReview, so a client certificate (the
    kubeconfig's admin) gets 401."""
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": METRICS_READER, "namespace": namespace}},
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": METRICS_READER},
         "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": METRICS_READER},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": METRICS_READER},
         "subjects": [{"kind": "ServiceAccount", "name": METRICS_READER, "namespace": namespace}]},
    ]


async def metrics_token(creds: Credentials, hours: int = 24, namespace: str = NAMESPACE) -> str:
    """A bearer token for Kueue's ``/metrics`` (see :func:`metrics_reader_objects`, created here)."""
    async with Api(creds) as api:
        for o in metrics_reader_objects(namespace):
            path = collection_path(o["apiVersion"], o["kind"], (o.get("metadata") or {}).get("namespace"))
            status, body = await api.raw("POST", path, orjson.dumps(o))
            if status not in (201, 409):
                raise ClusterError(f"creating {o['kind']} {METRICS_READER}: HTTP {status} {body[:300]!r}")
        req = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": hours * 3600}}
        doc = await api.json("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{METRICS_READER}/token", req)
    return str(doc["status"]["token"])


async def wait_active(creds: Credentials, cluster_queues: list[str], timeout: float = 60.0) -> None:
    """Until every ClusterQueue reports condition Active (Kueue has seen its flavor): Jobs submitted
    before that would wait for nothing but Kueue's start."""
    deadline = time.monotonic() + timeout
    pending = set(cluster_queues)
    async with Api(creds) as api:
        while pending:
            for name in sorted(pending):
                status, body = await api.raw("GET", f"/apis/{API_VERSION}/clusterqueues/{name}")
                if status == 200 and condition_time(orjson.loads(body), "Active") is not None:
                    pending.discard(name)
            if pending and time.monotonic() > deadline:
                raise ClusterError(f"Kueue ClusterQueue(s) {', '.join(sorted(pending))} not Active within "
                                   f"{timeout:g}s (see {NAMESPACE} log)")
            if pending:
                await asyncio.sleep(0.2)
