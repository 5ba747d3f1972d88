"""The per-GPU check of recorded GPU choices (plugins/gpushare's annotation), on hand-made pods and nodes."""

from __future__ import annotations

import pandas as pd

from kwokbench.figures.overbooking import gpu_choices

NODES = pd.DataFrame({"name": ["a", "b", "c"], "gpus": [2, 4, 0], "gpu_milli": [2000, 4000, 0]})


def _pods(rows: list[tuple[str, float, float, str, bool]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["node", "gpus", "gpu_milli", "gpu_index", "deleted"]).astype(
        {"gpu_index": "string"})


def test_shares_and_whole_gpus_are_held_per_gpu() -> None:
    pods = _pods([("a", 0, 600, "0", False), ("a", 0, 400, "0", False),  # GPU a/0 filled to exactly 1000
                  ("a", 0, 300, "1", False), ("b", 2, 2000, "1-3", False),
                  ("b", 0, 0, "", False),  # a CPU-only pod: no record expected
                  ("c", 0, 0, "", False)])
    g = gpu_choices(pods, NODES)
    assert g is not None
    assert (g["pods_recorded"], g["gpu_pods_unrecorded"], g["invalid"]) == (4, 0, 0)
    assert (g["gpus_used"], g["gpus_shared"], g["max_milli_on_one_gpu"]) == (4, 1, 1000)
    assert g["overcommitted_gpus"] == 0


def test_an_overcommitted_gpu_and_bad_records_are_found() -> None:
    pods = _pods([("a", 0, 700, "1", False), ("a", 0, 600, "1", False),  # 1300 on a/1: the per-node relaxation
                  ("a", 0, 500, "5", False),  # node a has 2 GPUs
                  ("b", 2, 2000, "0", False),  # two whole GPUs, one named
                  ("b", 0, 900, "", False),  # a GPU pod bound without a record (another scheduler)
                  ("b", 0, 900, "2", True)])  # deleted by the end: holds nothing
    g = gpu_choices(pods, NODES)
    assert g is not None
    assert (g["overcommitted_gpus"], g["overcommitted"], g["max_milli_on_one_gpu"]) == (1, ["a/1"], 1300)
    assert (g["invalid"], g["gpu_pods_unrecorded"]) == (2, 1)


def test_runs_without_records_have_no_section() -> None:
    assert gpu_choices(_pods([("a", 0, 500, "", False)]), NODES) is None
    assert gpu_choices(pd.DataFrame({"node": ["a"], "gpus": [1.0], "gpu_milli": [1000.0]}), NODES) is None


def test_a_gpu_overbooked_while_both_pods_lived_is_found_though_neither_is_left() -> None:
    """A trace with lifetimes: two 600-milli pods on one GPU at once, both gone by the end. Checked at the end only,
    the GPU would read empty; over the run it held 1200. The same pods one after the other held 600 at most."""
    def run(second_from: float) -> pd.DataFrame:
        return pd.DataFrame({"node": ["a", "a"], "gpus": [0.0, 0.0], "gpu_milli": [600.0, 600.0],
                             "gpu_index": pd.array(["0", "0"], dtype="string"), "deleted": [True, True],
                             "scheduled": [0.0, second_from], "deleted_at": [10.0, second_from + 10.0]})
    g = gpu_choices(run(5.0), NODES)
    assert g is not None
    assert (g["overcommitted_gpus"], g["overcommitted"], g["max_milli_on_one_gpu"]) == (1, ["a/0"], 1200)
    assert g["gpus_used"] == 0  # nothing is held at the end
    g = gpu_choices(run(10.0), NODES)  # the second bound as the first was deleted: a release before a take
    assert g is not None and (g["overcommitted_gpus"], g["max_milli_on_one_gpu"]) == (0, 600)
