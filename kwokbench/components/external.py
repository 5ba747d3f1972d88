"""Any scheduler binary (``binary: external``): its argv with placeholders, readiness path, metrics path,
version command and manifests, as the scenario describes it (:mod:`kwokbench.cluster.schedulers`)."""

from __future__ import annotations

from typing import Any

from kwokbench.cluster import schedulers as own
from kwokbench.cluster.kwokctl import ClusterInfo
from kwokbench.components import own_component_name
from kwokbench.components.kube_scheduler import KubeScheduler
from kwokbench.errors import ScenarioError
from kwokbench.progress import Reporter


class External(KubeScheduler):
    kind = "external"

    @property
    def replaces_kube_scheduler(self) -> bool:  # type: ignore[override]
        return self.setup.attached is None

    def check(self) -> None:
        own.check_command(self.variant)
        own.manifest_files(self.variant, self.setup.base)

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        if not self.replaces_kube_scheduler:
            return None  # an attached cluster's running scheduler, selected by scheduler_name
        v = self.variant
        if not v.command:
            raise ScenarioError(f"scheduler {v.name}: binary external without command selects a scheduler already "
                                "running on an attached cluster (up --kubeconfig); give it a command to start here")
        from kwokbench.runner import cluster_options

        assert isinstance(info, ClusterInfo)
        # one variant alone is the run's scheduler: measured as kube-scheduler, like kwokctl's
        component = own_component_name(v.name) if self.setup.concurrent else "kube-scheduler"
        copts = cluster_options(self.setup.scenario, self.setup.base, v, info.name, self.setup.toolchain)
        launch = own.plan(v, info, copts, component, self.setup.toolchain.path("kube-scheduler"), None,
                          self.setup.base)
        self._info = info
        with rep.status(f"starting scheduler {v.name} ({launch.scheduler_name})"):
            self._record = {"kind": self.kind,
                            **own.start_all([launch], info, own.manifest_files(v, self.setup.base))[0]}
        return self._record
