"""Fake nodes past one kwok controller: K controllers, each owning a partition of the nodes by label.

One kwok controller heartbeats every node and plays every pod's stages; past ~10k nodes it, not the
scheduler, sets the pace. Karpenter's scale tests split the nodes over several controllers by label, and
so does kwokbench: node ``j`` (counted over all node groups) gets ``kwokbench.io/kwok-partition: "j % K"``,
and controller ``i`` runs with ``--manage-nodes-with-label-selector=kwokbench.io/kwok-partition=i``.

On a kwokctl cluster kwokctl's own controller is partition 0 (the selector is a component patch in its
configuration); partitions 1…K-1 are started here with that controller's own command line (same
kubeconfig, kwok configuration and stages), a distinct ``--server-address`` (healthz, metrics, the fake
kubelet's port) and the partition's selector, as processes of the cluster (:mod:`kwokbench.cluster.processes`):
pid files, ``logs/kwok-controller-<i>.log``, stopped by ``down`` and the watchdog with the rest. Each
keeps kwokctl's annotation selector too (selectors are ANDed), so a node a chaos event takes away from
kwok is left alone by every controller. On an attached cluster the K controllers run locally
(:mod:`kwokbench.cluster.attach`), each with the attachment's label and its partition's.
"""

from __future__ import annotations

import contextlib
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import orjson

from kwokbench.cluster import processes
from kwokbench.errors import ClusterError, ScenarioError

PARTITION_LABEL = "kwokbench.io/kwok-partition"
MAX_KWOK_CONTROLLERS = 16
"""More would not help on one machine: each controller watches every pod of the cluster."""
COMPONENT = "kwok-controller"
READY_SECONDS = 30.0
STATE = "kwok-controllers.json"
"""In the cluster directory: the started controllers' records (partition, port, …), for their metrics endpoints."""

_REPLACED = ("--server-address=", "--node-port=", "--manage-nodes-with-label-selector=", "--manage-all-nodes=")
"""Flags of kwokctl's controller that each partition's controller sets itself."""


def check_count(k: object, what: str = "--kwok-controllers") -> int:
    """``k`` as a number of kwok controllers (1…16); a ScenarioError (one line) otherwise."""
    try:
        n = int(str(k).strip()) if not isinstance(k, bool) else -1
    except ValueError:
        n = -1
    if not 1 <= n <= MAX_KWOK_CONTROLLERS:
        raise ScenarioError(f"{what} {k!r}: expected a whole number from 1 to {MAX_KWOK_CONTROLLERS}")
    return n


def partition_of(index: int, k: int) -> int:
    """The partition of node ``index`` (over all groups): round-robin, so partitions differ by one node at most
    and every group is spread over every controller."""
    return index % k


def selector(partition: int, base: str = "") -> str:
    """The label selector of the controller of ``partition`` (after ``base``, e.g. an attachment's label)."""
    own = f"{PARTITION_LABEL}={partition}"
    return f"{base},{own}" if base else own


def component_name(partition: int) -> str:
    """Pid-file and log name of the controller of ``partition`` (0 is kwokctl's own ``kwok-controller``)."""
    return COMPONENT if partition == 0 else f"{COMPONENT}-{partition}"


def with_partition(body: bytes, partition: int) -> bytes:
    """A node's JSON body with its partition label added."""
    doc = orjson.loads(body)
    meta = doc.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), PARTITION_LABEL: str(partition)}
    return orjson.dumps(doc)


def partition_argv(base: list[str], partition: int, port: int) -> list[str]:
    """The command line of partition ``partition``'s controller from kwokctl's controller's ``base``: the same
    binary, kubeconfig, configuration files and annotation selector, its own port and label selector."""
    kept = [a for a in base if not a.startswith(_REPLACED)]
    return [*kept, "--manage-all-nodes=false", f"--manage-nodes-with-label-selector={selector(partition)}",
            f"--node-port={port}", f"--server-address=127.0.0.1:{port}"]


def attached_argv(binary: Path, kubeconfig: Path, stages: Path, base_selector: str, partition: int, k: int,
                  port: int, lease_seconds: int = 40) -> list[str]:
    """The command line of controller ``partition`` of ``k`` run locally against an attached cluster."""
    sel = selector(partition, base_selector) if k > 1 else base_selector
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--config={stages}", "--manage-all-nodes=false",
            f"--manage-nodes-with-label-selector={sel}", f"--node-lease-duration-seconds={lease_seconds}",
            f"--server-address=127.0.0.1:{port}"]


@dataclass(frozen=True)
class Launch:
    """One extra controller to start (pure data; :func:`start` runs it)."""

    partition: int
    argv: list[str]
    port: int

    @property
    def component(self) -> str:
        return component_name(self.partition)

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"


def plan(base: list[str], k: int, ports: list[int]) -> list[Launch]:
    """Partitions 1…k-1 (kwokctl's controller is 0), on ``ports`` (one each)."""
    if len(ports) < k - 1:
        raise ValueError(f"{k - 1} ports needed, {len(ports)} given")
    return [Launch(i, partition_argv(base, i, ports[i - 1]), ports[i - 1]) for i in range(1, k)]


def _healthy(port: int) -> bool:
    with contextlib.suppress(OSError, ValueError), \
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
        return bool(r.status == 200)
    return False


def start(launches: list[Launch], cluster_dir: Path, cwd: Path | str, env: dict[str, str] | None = None,
          timeout: float = READY_SECONDS) -> list[dict[str, object]]:
    """Start each controller as a process of the cluster and wait until its /healthz answers; if one fails,
    those already started are stopped and a one-line ClusterError names its log."""
    started: list[processes.ComponentProcess] = []
    records: list[dict[str, object]] = []
    try:
        for launch in launches:
            log = cluster_dir / "logs" / f"{launch.component}.log"
            try:
                proc = processes.spawn(cluster_dir, launch.component, launch.argv, cwd, env)
            except OSError as e:
                raise ClusterError(f"{launch.component}: cannot start {launch.argv[0]!r}: {e.strerror or e}") from e
            known, _ = processes.from_pid_file(cluster_dir, launch.component)
            if known is not None:
                started.append(known)
            t0 = time.monotonic()
            while not _healthy(launch.port):
                if proc.poll() is not None:
                    raise ClusterError(f"{launch.component} exited with code {proc.returncode} at start: "
                                       f"{processes.telling_line(log)} (log: {log})")
                if time.monotonic() - t0 > timeout:
                    raise ClusterError(f"{launch.component}: http://127.0.0.1:{launch.port}/healthz did not answer "
                                       f"200 within {timeout:g}s (log: {log})")
                time.sleep(0.2)
            records.append({"partition": launch.partition, "component": launch.component, "pid": proc.pid,
                            "port": launch.port, "argv": launch.argv, "log": str(log)})
    except BaseException:
        processes.stop(started, cluster_dir)
        raise
    if records:
        (cluster_dir / STATE).write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2))
    return records


def endpoints(cluster_dir: Path) -> dict[str, str]:
    """Component → /metrics URL of the controllers :func:`start` started in the cluster (none: empty)."""
    try:
        records = orjson.loads((cluster_dir / STATE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return {str(r["component"]): f"http://127.0.0.1:{int(r['port'])}/metrics" for r in records}

