"""Kueue (sigs.k8s.io/kueue) as a component of the run: built on first use, its CRDs installed, the process
started (a component of the cluster, stopped with it), the scenario's flavors and queues created and Active;
its ``/metrics`` scraped with a ServiceAccount token (kept in memory, never in the run directory).

One Kueue per cluster: a run on a cluster that still has one running (kept with ``--keep-cluster``, reused with
``--cluster``, or a sweep's next point) stops that one before starting its own, and stops its own at the end
unless the cluster is kept."""

from __future__ import annotations

import asyncio
from typing import Any

from kwokbench.cluster import processes
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.cluster.kwokctl import ClusterInfo, free_port
from kwokbench.components import Base
from kwokbench.components.kueue import cluster as kueue
from kwokbench.errors import ScenarioError
from kwokbench.measure import Measurement
from kwokbench.progress import Reporter
from kwokbench.scenario import KueueSpec, Scenario


def queue_objects(spec: KueueSpec) -> list[dict[str, Any]]:
    """The scenario's Kueue objects in creation order: a ResourceFlavor for each flavor the ClusterQueues name
    (once), the ClusterQueues, the LocalQueues."""
    objs = [kueue.resource_flavor(f) for f in sorted({c.flavor for c in spec.cluster_queues})]
    objs += [kueue.cluster_queue(c.name, c.flavor, dict(c.quota), queueing_strategy=c.queueing_strategy)
             for c in spec.cluster_queues]
    return objs + [kueue.local_queue(q.name, q.cluster_queue, q.namespace) for q in spec.local_queues]


class Kueue(Base):
    name = "kueue"
    cluster_process = True

    def __init__(self, scenario: Scenario) -> None:
        assert scenario.cluster.kueue is not None
        self.spec = scenario.cluster.kueue
        self.binary: Any = None
        self.record: dict[str, Any] | None = None
        self._token = ""
        self._proc: kueue.KueueProcess | None = None

    def build(self, rep: Reporter) -> None:
        from kwokbench.components.kueue import build as kueue_toolchain

        self.binary = kueue_toolchain.build_kueue(rep)

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        from kwokbench.components.kueue import build as kueue_toolchain

        if not isinstance(info, ClusterInfo):
            raise ScenarioError("cluster.kueue: kwokbench starts Kueue only on clusters it creates")
        if self.binary is None:
            self.build(rep)
        spec = self.spec
        earlier, _ = processes.from_pid_file(info.dir, kueue.COMPONENT)
        if earlier is not None:  # one Kueue per cluster: the one an earlier run left running gives way
            rep.info(f"stopping the Kueue an earlier run left on cluster {info.name} (pid {earlier.pid})")
            processes.stop([earlier], info.dir)
        with rep.status(f"starting Kueue {kueue_toolchain.KUEUE_VERSION}"):
            asyncio.run(kueue.install(info.credentials(), kueue_toolchain.kueue_crds()))
            proc = self._proc = kueue.start_kueue(info.dir, info.kubeconfig, self.binary, free_port())
            ready = kueue.wait_ready(proc)
            asyncio.run(kueue.create_objects(info.credentials(), queue_objects(spec)))
            asyncio.run(kueue.wait_active(info.credentials(), [c.name for c in spec.cluster_queues]))
            self._token = asyncio.run(kueue.metrics_token(info.credentials()))
        self.record = {"version": kueue_toolchain.KUEUE_VERSION, "pid": proc.pid,
                       "ready_seconds": ready - proc.started, "log": str(proc.log),
                       "metrics_url": f"https://127.0.0.1:{proc.ports.metrics}/metrics"}
        return self.record

    def version(self) -> str:
        from kwokbench.components.kueue import build as kueue_toolchain

        return f"kueue {kueue_toolchain.KUEUE_VERSION}"

    def endpoints(self) -> list[Endpoint]:
        if self.record is None:
            return []
        # self-signed serving certificate; a ServiceAccount token is what it authenticates
        return [Endpoint("kueue", self.record["metrics_url"],
                         Credentials("", None, None, None, token=self._token, insecure=True))]

    def stop(self) -> None:
        if self._proc is not None:
            kueue.stop_kueue(self._proc)
            self._proc = None

    def measurements(self) -> list[Measurement]:
        from kwokbench.components.kueue.measure import KueueWorkloads

        return [KueueWorkloads()]
