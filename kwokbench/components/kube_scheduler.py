"""The stock kube-scheduler (the control plane's version), and what every kube-scheduler kind shares.

kwokctl runs it as one of the cluster's components, configured from the variant (``configure``); when several
variants share a cluster (``concurrent_schedulers``), kwokbench starts each kube-scheduler itself instead, with
its own profile name, secure port and configuration (:func:`kwokbench.cluster.schedulers.plan`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kwokbench.cluster import schedulers as own
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions
from kwokbench.components import PodSettings, Scheduler, own_component_name
from kwokbench.metrics.scrape import Endpoint
from kwokbench.progress import Reporter
from kwokbench.scenario import WorkloadSpec


class KubeScheduler(Scheduler):
    @property
    def replaces_kube_scheduler(self) -> bool:  # type: ignore[override]
        return self.setup.concurrent

    def configure(self, copts: ClusterOptions) -> None:
        if self.binary is not None:
            copts.scheduler_binary = self.binary

    def pod_settings(self, w: WorkloadSpec, requests: dict[str, str], kind: str) -> PodSettings:
        return PodSettings(scheduler_name=self.variant.effective_scheduler_name if self.variant.scheduler_name
                           else None)

    def version(self) -> str:
        if self._record is not None:
            return str(self._record.get("version", ""))
        return own.version([str(self.binary or self.setup.toolchain.path("kube-scheduler")), "--version"],
                           Path.cwd())

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        if not self.replaces_kube_scheduler:
            return None
        from kwokbench.runner import cluster_options

        assert isinstance(info, ClusterInfo)
        copts = cluster_options(self.setup.scenario, self.setup.base, self.variant, info.name, self.setup.toolchain)
        self.configure(copts)
        # one variant alone is the run's scheduler: measured as kube-scheduler, like kwokctl's
        component = own_component_name(self.name) if self.setup.concurrent else "kube-scheduler"
        launch = own.plan(self.variant, info, copts, component, self.setup.toolchain.path("kube-scheduler"),
                          self.binary, self.setup.base)
        self._info = info
        with rep.status(f"starting scheduler {self.name} ({launch.scheduler_name})"):
            self._record = {"kind": self.kind, **own.start(launch, info)}
        return self._record

    @property
    def kind(self) -> str:
        return self.variant.binary if self.variant.binary in ("kube-scheduler", "scheduler-plugins") else "plugin"

    def endpoints(self) -> list[Endpoint]:
        return own.endpoints_of(self._record, self._info)

    def stop(self) -> None:
        if self._record is not None and self._info is not None:
            own.stop(self._info, self._record["component"])
            self._record = None
