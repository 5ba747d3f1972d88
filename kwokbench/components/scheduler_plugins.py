"""sigs.k8s.io/scheduler-plugins' kube-scheduler (Coscheduling, CapacityScheduling, …), built from Go modules."""

from __future__ import annotations

from kwokbench.components.kube_scheduler import KubeScheduler
from kwokbench.progress import Reporter


class SchedulerPlugins(KubeScheduler):
    kind = "scheduler-plugins"
    title = "scheduler-plugins"

    def build(self, rep: Reporter) -> None:
        tc = self.setup.toolchain
        tc.install("auto", rep, extras=("scheduler-plugins",))
        self.binary = tc.path("kube-scheduler", "scheduler-plugins")
