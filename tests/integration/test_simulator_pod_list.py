"""The FGD paper's simulator's pod list for a seed, with Go's own math/rand (the helper built from
kwokbench/toolchain/gorand on first use, a few seconds with Go's cache warm)."""

from __future__ import annotations

import pytest

from kwokbench.toolchain.gorand import GoRand
from kwokbench.trace import alibaba
from kwokbench.trace.inflate import capacity, request_milli, simulator_list
from tests.support.traces import ALIBABA as TRACE
from tests.support.traces import HAVE_ALIBABA, NEEDS_ALIBABA


def test_gorand_draws_are_gos() -> None:
    # rand.New(rand.NewSource(42)) in Go 1.26: Int(), Intn(10), Shuffle(5) of 0..4, Perm(5), in that order
    with GoRand(42) as r:
        assert r.next_int() == 3440579354231278675
        assert r.intn(10) == 7
        assert r.shuffle(5) == [1, 2, 4, 0, 3]
        assert r.perm(5) == [1, 0, 2, 3, 4]


@pytest.mark.skipif(not HAVE_ALIBABA, reason=NEEDS_ALIBABA)
def test_the_default_traces_list_for_seed_42_is_the_simulators() -> None:
    """Expected figures from an independent Go program written from the simulator's published rules (pods sorted
    by name; rand.Int spent; rand.Shuffle; rand.Intn over the sorted list until a copy's per-GPU milli would pass
    1.3 x 6212 GPUs), run here on 2026-11-26 against the same CSV."""
    pods = alibaba.read_openb_pods(TRACE / "openb_pod_list_default.csv")
    gpus = capacity(alibaba.read_openb_nodes(TRACE / "openb_node_list_gpu_node.csv"), "gpu")
    with GoRand(42) as draws:
        out = simulator_list(pods, 1.3, gpus, draws)
    assert gpus == 6212 and len(pods) == 8152
    assert len(out) == 10866 and sum(request_milli(p, "gpu") for p in out) == 8_075_080
    assert [p.name for p in out[:3]] == ["openb-pod-0255", "openb-pod-1685", "openb-pod-6784"]
    assert [p.name for p in out[-2:]] == ["openb-pod-7197-r2712", "openb-pod-5877-r2713"]
