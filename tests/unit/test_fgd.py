"""The FGD measure's target workload from a trace's pod list (kwokbench.trace.fgd), and the GPUShare
configuration that carries it (scenarios/configs/gpushare.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kwokbench.trace.alibaba import read_openb_pods
from kwokbench.trace.fgd import main, typical_pods
from kwokbench.trace.format import TracePod
from tests.conftest import REPO
from tests.support.traces import ALIBABA, HAVE_ALIBABA, NEEDS_ALIBABA

DEFAULT = ALIBABA / "openb_pod_list_default.csv"


def _pod(i: int, cpu: int, gpu: int = 0, milli: int = 0, models: tuple[str, ...] = ()) -> TracePod:
    return TracePod(name=f"p{i}", arrival_seconds=i, cpu_milli=cpu, memory_mib=1024, gpu=gpu, gpu_milli=milli,
                    gpu_models=models)


def test_keys_are_kept_most_frequent_first_until_they_cover_95_percent() -> None:
    pods = ([_pod(i, 4000, milli=500) for i in range(50)]  # 50%: a share
            + [_pod(i, 8000, gpu=2) for i in range(30)]  # 30%: two whole GPUs
            + [_pod(i, 2000) for i in range(15)]  # 15%: CPU-only: 95% reached with it
            + [_pod(i, 2000, milli=300, models=("T4",)) for i in range(5)])  # left out
    w = typical_pods(pods)
    assert w == [{"cpu": 4000, "gpuMilli": 500, "gpus": 0, "weight": 50},
                 {"cpu": 8000, "gpuMilli": 0, "gpus": 2, "weight": 30},
                 {"cpu": 2000, "gpuMilli": 0, "gpus": 0, "weight": 15}]
    # equal counts: the larger key first; models are part of the key
    tie = [_pod(0, 1000, milli=200, models=("T4",)), _pod(1, 1000, milli=200, models=("V100M16", "V100M32")),
           _pod(2, 3000)]
    assert [t.get("models") for t in typical_pods(tie, cover=1.0)] == [None, ["V100M16", "V100M32"], ["T4"]]


@pytest.mark.skipif(not HAVE_ALIBABA, reason=NEEDS_ALIBABA)
def test_the_default_pod_lists_typical_pods_are_the_simulators_and_the_configs() -> None:
    pods = read_openb_pods(DEFAULT)
    w = typical_pods(pods)
    # what the simulator's rules give on this list (counted independently when the rules were read)
    assert (len(pods), len(w), sum(t["weight"] for t in w)) == (8152, 35, 7766)
    assert w[0] == {"cpu": 3152, "gpuMilli": 810, "gpus": 0, "weight": 1047}
    config = yaml.safe_load((REPO / "scenarios" / "configs" / "gpushare.yaml").read_text())
    [args] = [c["args"] for c in config["profiles"][0]["pluginConfig"] if c["name"] == "GPUShare"]
    assert args["workload"] == w


def test_the_command_prints_the_args_and_refuses_a_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) \
        -> None:
    csv = tmp_path / "pods.csv"
    csv.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,512,1,500\nb,1000,512,0,0\n")
    assert main([str(csv)]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["workload"][0]["gpuMilli"] == 500
    csv.write_text("name,cpu_milli\na,1000\n")
    assert main([str(csv)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "memory_mib" in err and err.count("\n") == 1


def test_the_fragmentation_measure_matches_the_plugins_worked_example() -> None:
    """plugins/gpushare's example A (gpushare_test.go): a T4 node, 8 cores left, GPUs 1000/500/300/0 milli free."""
    from kwokbench.trace.fgd import fragment, fragmentation

    node = (8000.0, [1000.0, 500.0, 300.0, 0.0], "T4")
    share = {"cpu": 2000, "gpuMilli": 400, "gpus": 0, "weight": 0.5}
    whole = {"cpu": 4000, "gpuMilli": 0, "gpus": 1, "weight": 0.3}
    cpu = {"cpu": 1000, "gpuMilli": 0, "gpus": 0, "weight": 0.2}
    assert [fragment(*node, t) for t in (share, whole, cpu)] == [300, 800, 1800]
    assert fragment(*node, {**whole, "gpus": 2}) == 1800
    assert fragment(*node, {**share, "models": ["V100M16"]}) == 1800
    assert fragment(*node, {**share, "cpu": 10000}) == 1800
    assert fragmentation(*node, [share, whole, cpu]) == pytest.approx(750)
