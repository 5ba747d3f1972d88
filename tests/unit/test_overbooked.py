"""Nodes given more than they have, at any moment, from the pods' own bindings and ends (figures/allocation.py):
two one-GPU pods at once on a one-GPU node are overbooked; the second bound the instant the first finished is
not; a pod slot, CPU and GPU thousandths (where the node advertises them) alike. The gate's `overbooked` counts
them."""

from __future__ import annotations

import math

import pandas as pd

from kwokbench.compare.gate import METRICS
from kwokbench.figures.allocation import overbooked

NODES = pd.DataFrame({"name": ["n1", "n2"], "cpu_m": [4000.0, 4000.0], "mem_mi": [8192.0, 8192.0],
                      "gpus": [1.0, 1.0], "gpu_milli": [0.0, 1000.0], "pods": [110.0, 2.0]})
NAN = math.nan


def _pods(rows: list[tuple[str, float, float, float, float, float]]) -> pd.DataFrame:
    """(node, scheduled, finished, gpus, gpu_milli, cpu_m) per pod."""
    return pd.DataFrame({"node": [r[0] for r in rows], "scheduled": [r[1] for r in rows],
                         "finished": [r[2] for r in rows], "deleted_at": [NAN] * len(rows),
                         "gpus": [r[3] for r in rows], "gpu_milli": [r[4] for r in rows],
                         "cpu_m": [r[5] for r in rows], "mem_mi": [100.0] * len(rows)})


def test_two_holders_of_one_gpu_at_once_overbook_the_node() -> None:
    at_once = overbooked(_pods([("n1", 1.0, NAN, 1, 0, 100), ("n1", 2.0, NAN, 1, 0, 100)]), NODES)
    assert at_once["nodes"] == 1 and at_once["by_resource"] == {"gpus": 1}
    assert at_once["worst"] == [{"node": "n1", "resource": "gpus", "held": 2.0, "allocatable": 1.0}]
    # the second bound the instant the first finished: a release before a take, never two at once
    in_turn = overbooked(_pods([("n1", 1.0, 2.0, 1, 0, 100), ("n1", 2.0, NAN, 1, 0, 100)]), NODES)
    assert in_turn == {"nodes": 0, "by_resource": {}, "worst": []}


def test_every_resource_is_held_to_the_node() -> None:
    rows = [("n2", 1.0, NAN, 0, 600, 3000), ("n2", 1.5, NAN, 0, 600, 3000), ("n2", 1.7, NAN, 0, 0, 100)]
    got = overbooked(_pods(rows), NODES)
    # n2: 1200 of 1000 GPU thousandths, 6100 of 4000 millicores, 3 pods of 2 slots
    assert got["nodes"] == 1 and got["by_resource"] == {"cpu": 1, "gpu_milli": 1, "pods": 1}, got
    # n1 does not advertise thousandths: shares there are the pods' own affair (a GPU-aware scheduler's records)
    assert overbooked(_pods([("n1", 1.0, NAN, 0, 600, 10), ("n1", 1.0, NAN, 0, 600, 10)]), NODES)["nodes"] == 0
    # unbound pods hold nothing
    assert overbooked(_pods([("", NAN, NAN, 1, 0, 100)] * 3), NODES)["nodes"] == 0


def test_the_gate_counts_overbooked_nodes() -> None:
    summary = {"allocation": {"overbooked": {"nodes": 2}}, "claims": {"counters": {"overcommitted": {"x": 1}}}}
    assert METRICS["overbooked"].get(summary) == 3.0
    assert METRICS["overbooked"].get({}) is None
