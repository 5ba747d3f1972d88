"""kwokbench's builtin scheduler extender as a process of the run (``python -m kwokbench.components.extender.server``).

It is part of the cluster a variant runs on (kube-scheduler's configuration names its URL), so it starts
before the cluster and stops with it; its own counts are read by :mod:`kwokbench.components.extender.measure`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from typing import Any

from kwokbench.cluster.kwokctl import free_port
from kwokbench.errors import ClusterError
from kwokbench.scenario import ExtenderSpec


class ExtenderProcess:
    """One per variant run."""

    def __init__(self, spec: ExtenderSpec) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config: dict[str, Any] = {"urlPrefix": self.url, "weight": spec.weight, "enableHTTPS": False,
                                       "nodeCacheCapable": False, "httpTimeout": "30s"}
        if spec.filter:
            self.config["filterVerb"] = "filter"
        if spec.prioritize:
            self.config["prioritizeVerb"] = "prioritize"
        self.rule = spec.rule
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "kwokbench.components.extender.server",
                                      "--port", str(self.port),
                                      "--rule", self.rule, "--parent", str(os.getpid())],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ClusterError(f"the extender exited at start (exit {self.proc.returncode})")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise ClusterError(f"the extender did not answer on {self.url} within {timeout:g}s")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
