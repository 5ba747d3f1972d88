"""sigs.k8s.io/scheduler-plugins' kube-scheduler (Coscheduling, CapacityScheduling, …), built from Go modules."""

from __future__ import annotations

from typing import Any

from kwokbench.components.kube_scheduler import KubeScheduler
from kwokbench.progress import Reporter
from kwokbench.toolchain import versions


class SchedulerPlugins(KubeScheduler):
    kind = "scheduler-plugins"
    title = "scheduler-plugins"

    def build(self, rep: Reporter) -> None:
        tc = self.setup.toolchain
        tc.install("auto", rep, extras=("scheduler-plugins",))
        self.binary = tc.path("kube-scheduler", "scheduler-plugins")

    def libraries(self) -> str:
        return versions.SCHEDULER_PLUGINS_KUBERNETES

    def fairness(self) -> dict[str, Any]:
        k = self.libraries()
        return {**super().fairness(), "scheduler_plugins": {
            "version": versions.SCHEDULER_PLUGINS, "kubernetes": k,
            "skew_to_control_plane": versions.skew(k, self.setup.scenario.kubernetes_for(self.variant))}}
