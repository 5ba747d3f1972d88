"""Volcano's build from its pinned source (`kwokbench tools install volcano`): its binaries, the version stamp,
the CRDs copied beside them, and where the agent scheduler's socket may live."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from kwokbench.cluster import processes
from kwokbench.components.volcano.settings import GIT_SHA, VOLCANO, VOLCANO_KUBERNETES
from kwokbench.toolchain.sources import PinnedSource, SourceBuild

if TYPE_CHECKING:
    pass  # the summary's frames: pandas loads when a run is analysed, not when it is planned


MODULE = "volcano.sh/volcano"
SOURCES = (PinnedSource(MODULE, "volcano-v1.15.1.tar.gz",
                        "06f81ed19cabc6d2bde3cd3796da2e48a3d3099189d3b09a7c6345053cdc57cb",
                        "github.com/volcano-sh/volcano at tag v1.15.1"),)
"""The ``git archive`` of tag v1.15.1 without ``docs/`` (upstream serves no archive byte-identical to it)."""
BINARY = "vc-scheduler"
CONTROLLER_MANAGER = "vc-controller-manager"
AGENT = "vc-agent-scheduler"
AGENT_CONF = "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n"
"""The agent-scheduler's configuration as its Helm chart deploys it (its built-in default,
``pkg/agentscheduler/util.go``: the only action and plugins it registers)."""
AGENT_SOCKET = "klog-klog.sock"
"""The log-level socket vc-agent-scheduler opens in ``$DEBUG_SOCKET_DIR`` at the end of its start
(``pkg/agentscheduler/util.go``: after its informers synced and its workers started). Its /healthz answers from
before its informers start, so this file is when it is ready."""
SUN_PATH_MAX = processes.SUN_PATH_MAX


def socket_dir(cluster_dir: Path) -> Path:
    """A fresh directory for Volcano's klog-level socket (``$DEBUG_SOCKET_DIR``). Not the run's own directory:
    under pytest or a deep home the socket's path passes :data:`SUN_PATH_MAX` (CI's was 112 bytes), its bind
    fails and Volcano drops the error (``ListenAndServeKlogLogLevel`` just returns), so the agent-scheduler never
    looked ready and was stopped at its timeout; not Volcano's default ``/tmp/klog-socks`` either, which every
    Volcano on the host shares. The cluster owns it (a kept cluster's Volcano keeps its socket until ``down``)."""
    return processes.scratch_dir(cluster_dir, "kb-vc-", len(AGENT_SOCKET))


CRD_DIRS = ("config/crd/volcano/bases", "config/crd/jobflow/bases")


def ldflags() -> str:
    pkg = f"{MODULE}/pkg/version"
    return f"-s -w -X {pkg}.Version={VOLCANO} -X {pkg}.GitSHA={GIT_SHA} -X '{pkg}.Built=2026-01-01 00:00:00'"


def build_commands(by: dict[str, Path], out: Path) -> list[list[str]]:
    """Run in the extracted archive (``volcano.sh/apis`` is replaced by its staging directory there); the
    controller-manager goes next to the scheduler, so the recipe moves it into the cache with it."""
    flags = ["-trimpath", "-ldflags", ldflags()]
    return [["go", "mod", "download"],
            ["go", "build", *flags, "-o", str(out), "./cmd/scheduler"],
            ["go", "build", *flags, "-o", str(out.parent / CONTROLLER_MANAGER), "./cmd/controller-manager"],
            ["go", "build", *flags, "-o", str(out.parent / AGENT), "./cmd/agent-scheduler"]]


def copy_crds(by: dict[str, Path], dest: Path) -> None:
    (dest / "crds").mkdir()
    for d in CRD_DIRS:
        for f in sorted((by[MODULE] / d).glob("*.yaml")):
            shutil.copyfile(f, dest / "crds" / f.name)


RECIPE = SourceBuild("volcano", VOLCANO, VOLCANO_KUBERNETES, SOURCES, BINARY, MODULE, build_commands, copy_crds)


