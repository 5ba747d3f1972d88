"""The emitted Indexed Job is accepted by a real apiserver (server-side dry run: nothing is created).
Written with --emit-job; not yet run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kwokbench.cluster import ClusterInfo
from kwokbench.toolchain import Toolchain
from tests.conftest import REPO, kwokbench


def test_emitted_job_passes_server_side_dry_run(cluster: ClusterInfo, toolchain: Toolchain, tmp_path: Path) -> None:
    res = kwokbench("sweep", str(REPO / "scenarios/quickstart.yaml"), "--nodes", "20,40", "--qps", "20,800",
                    "--emit-job", "3", "--parallelism", "2", "--image", "kwokbench:e2e", check=True)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(res.stdout)
    out = subprocess.run([str(toolchain.path("kubectl")), "--kubeconfig", str(cluster.kubeconfig), "apply",
                          "--dry-run=server", "-f", str(manifest)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "job.batch/kwokbench-quickstart created (server dry run)" in out.stdout
    assert "configmap/kwokbench-quickstart-scenario created (server dry run)" in out.stdout
