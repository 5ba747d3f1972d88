"""A 2×2 capacity-planning sweep on real clusters: table, knee, sentences, charts, stored runs."""

from __future__ import annotations

import json
from pathlib import Path

from kwokbench.store import load_run
from tests.conftest import REPO, kwokbench


def test_sweep_2x2_finds_a_knee(tmp_path: Path) -> None:
    res = kwokbench("sweep", str(REPO / "scenarios/quickstart.yaml"), "--nodes", "20,40", "--qps", "20,800",
                    "--duration", "3", "--slo-p99", "1s", "--out", str(tmp_path), check=True)
    [sweep_dir] = (tmp_path / "quickstart").glob("sweep-*")
    doc = json.loads((sweep_dir / "sweep.json").read_text())
    assert doc["status"] == "complete" and doc["nodes"] == [20, 40] and doc["qps"] == [20.0, 800.0]
    points = {(p["nodes"], p["qps"]): p for p in doc["points"]}
    assert set(points) == {(20, 20.0), (20, 800.0), (40, 20.0), (40, 800.0)}
    # 20 pods/s holds on both sizes; 800/s is beyond what this control plane binds (or fits)
    for n in (20, 40):
        low = points[(n, 20.0)]
        assert low["holds"], low
        assert low["p99"] < 1.0 and low["ratio"] >= 0.95
        assert not points[(n, 800.0)]["holds"]
        assert doc["knees"][str(n)] == 20.0
        run = load_run(Path(low["run"]))  # every point is an ordinary stored run on the size's cluster
        assert run.meta["status"] == "complete" and run.meta["cluster"]["reused"]
        assert run.meta["cluster"]["nodes"] == n and run.summary is not None
        assert run.summary["pods_scheduled"] == 60  # max(50, 20/s × 3 s)
    runs = {load_run(Path(p["run"])).meta["cluster"]["name"] for p in doc["points"] if not p.get("skipped")}
    assert len(runs) == 2  # one cluster per size, reused across rates
    [sentence] = [x for x in doc["sentences"] if x.startswith("with 20 nodes this control plane sustains 20 pods/s "
                                                               "within a 1 s p99 (it failed at 800/s)")]
    assert "-bound" in sentence  # and says what limited the first point that failed
    assert "sustains 20 pods/s within a 1 s p99" in " ".join(res.stdout.split())
    for f in ("sweep.md", "throughput_vs_qps.png", "latency_vs_qps.png", "control_plane_vs_nodes.png"):
        assert (sweep_dir / f).stat().st_size > 0
    assert kwokbench("status", check=True).stdout.count("kb-sweep-") == 0  # clusters deleted
