"""A kube-scheduler with an out-of-tree Go plugin compiled in (``binary:`` the plugin's directory)."""

from __future__ import annotations

from pathlib import Path

from kwokbench.components import Setup
from kwokbench.components.kube_scheduler import KubeScheduler
from kwokbench.progress import Reporter
from kwokbench.toolchain.plugin import build_scheduler, plugin_dir


class GoPlugin(KubeScheduler):
    def __init__(self, setup: Setup, directory: Path) -> None:
        super().__init__(setup)
        self.directory = directory

    def check(self) -> None:
        plugin_dir(self.directory)

    def build(self, rep: Reporter) -> None:
        self.binary = build_scheduler(self.directory, rep)
