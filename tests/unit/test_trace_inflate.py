"""Inflating a pod list to a multiple of the cluster's capacity, rescaling its times, cutting it."""

from __future__ import annotations

import pytest

from kwokbench.errors import ScenarioError
from kwokbench.trace.format import TraceNode, TracePod
from kwokbench.trace.inflate import capacity, inflate, inflation_resource, limit, request_milli, scale_times

PODS = [
    TracePod(name="whole", arrival_seconds=0, lifetime_seconds=100, cpu_milli=4000, memory_mib=1, gpu=1),
    TracePod(name="shared", arrival_seconds=10, lifetime_seconds=50, cpu_milli=2000, memory_mib=1, gpu_milli=300),
    TracePod(name="cpu", arrival_seconds=15, cpu_milli=1000, memory_mib=1),
    TracePod(name="multi", arrival_seconds=40, lifetime_seconds=10, cpu_milli=8000, memory_mib=1, gpu=2),
]
NODES = [TraceNode(name=f"n{i}", cpu_milli=32000, memory_mib=1, gpu=4) for i in range(5)]  # 20 GPUs, 160 cores


def gpus(pods: list[TracePod]) -> float:
    return sum(request_milli(p, "gpu") for p in pods) / 1000


def test_inflate_resamples_up_to_the_target_reproducibly() -> None:
    cap = capacity(NODES, "gpu")
    out = inflate(PODS, 1.3, cap, seed=42)
    assert out == inflate(PODS, 1.3, cap, seed=42)
    assert out != inflate(PODS, 1.3, cap, seed=43)
    assert out[:4] == PODS  # the original pods first, unchanged
    assert 1.3 * cap - 2 < gpus(out) <= 1.3 * cap  # the first copy that would pass the target ends it
    copies = out[4:]
    assert [p.name.rsplit("-r", 1)[1] for p in copies] == [str(k) for k in range(len(copies))]
    assert len({p.name for p in out}) == len(out)
    assert {p.name.rsplit("-r", 1)[0] for p in copies} <= {p.name for p in PODS}
    arrivals = [p.arrival_seconds for p in out]
    assert arrivals == sorted(arrivals) and min(arrivals[4:]) >= 40  # copies continue the trace, in list order
    gap = {"whole": 0, "shared": 10, "cpu": 5, "multi": 25}
    assert [b.arrival_seconds - a.arrival_seconds for a, b in zip(out[3:], copies, strict=False)] == [
        gap[p.name.rsplit("-r", 1)[0]] for p in copies]
    original = {p.name: p for p in PODS}
    assert all(p.lifetime_seconds == original[p.name.rsplit("-r", 1)[0]].lifetime_seconds for p in copies)


def test_inflate_prunes_a_list_above_the_target() -> None:
    out = inflate(PODS, 0.1, capacity(NODES, "gpu"), seed=1)  # 3.3 GPUs requested, target 2
    assert gpus(out) <= 2 and len(out) < len(PODS)
    assert [p.name for p in out] == [p.name for p in PODS if p in out]  # survivors keep their order


def test_cpu_only_trace_inflates_on_cpu() -> None:
    cpu_pods = [PODS[2], TracePod(name="cpu2", arrival_seconds=20, cpu_milli=3000, memory_mib=1)]
    assert inflation_resource(cpu_pods) == "cpu" and inflation_resource(PODS) == "gpu"
    cap = capacity(NODES, "cpu")
    assert cap == 160
    out = inflate(cpu_pods, 1.3, cap, seed=7, resource="cpu")
    assert 1.3 * cap - 3 < sum(p.cpu_milli for p in out) / 1000 <= 1.3 * cap
    with pytest.raises(ScenarioError, match=r"^inflate: no pod requests any gpu; inflate on cpu instead$"):
        inflate(cpu_pods, 1.3, capacity(NODES, "gpu"), seed=7)


def test_inflate_needs_capacity() -> None:
    with pytest.raises(ScenarioError, match=r"^inflate: factor and gpu capacity must be > 0 \(got 1.3 and 0\)$"):
        inflate(PODS, 1.3, 0, seed=1)


def test_scale_times_scales_arrivals_and_lifetimes() -> None:
    fast = scale_times(PODS, time_scale=0.5)
    assert [(p.arrival_seconds, p.lifetime_seconds) for p in fast] == [(0, 50), (5, 25), (7.5, None), (20, 5)]
    fitted = scale_times(PODS, duration_seconds=4)
    assert [(p.arrival_seconds, p.lifetime_seconds) for p in fitted] == [(0, 10), (1, 5), (1.5, None), (4, 1)]
    assert [p.name for p in fitted] == [p.name for p in PODS]
    with pytest.raises(ScenarioError, match="not both or neither"):
        scale_times(PODS, time_scale=2, duration_seconds=4)
    with pytest.raises(ScenarioError, match="not both or neither"):
        scale_times(PODS)
    with pytest.raises(ScenarioError, match=r"time_scale must be > 0, got -1"):
        scale_times(PODS, time_scale=-1)
    with pytest.raises(ScenarioError, match=r"cannot stretch arrivals ending at 0 s"):
        scale_times(PODS[:1], duration_seconds=10)


def test_limit_keeps_the_first_pods() -> None:
    assert limit(PODS, 2) == PODS[:2]
    assert limit(PODS, 10) == PODS
    with pytest.raises(ScenarioError, match=r"count must be >= 1, got 0"):
        limit(PODS, 0)


def test_shuffle_is_a_seeded_permutation() -> None:
    from kwokbench.trace.inflate import shuffle

    many = [TracePod(name=f"p{i}", arrival_seconds=i, cpu_milli=1, memory_mib=1) for i in range(50)]
    out = shuffle(many, 42)
    assert out == shuffle(many, 42) and out != shuffle(many, 43) and out != many
    assert sorted(p.name for p in out) == sorted(p.name for p in many)


def test_a_shuffled_list_needs_a_rate() -> None:
    from pydantic import ValidationError

    from kwokbench.scenario import TraceSpec

    with pytest.raises(ValidationError, match=r"trace\.shuffle: give rate too"):
        TraceSpec(file="x.csv", shuffle=True)
    assert TraceSpec(file="x.csv", shuffle=True, rate=100).shuffle


class _Draws:
    """Go's draws as a script: the values the simulator's generator would give (pure logic under test)."""

    def __init__(self, order: list[int], intn: list[int]) -> None:
        self.order, self.values, self.calls = order, list(intn), []  # type: list[int], list[int], list[str]

    def next_int(self) -> int:
        self.calls.append("I")
        return 7

    def shuffle(self, n: int) -> list[int]:
        self.calls.append(f"S {n}")
        return self.order

    def intn(self, n: int) -> int:
        self.calls.append(f"N {n}")
        return self.values.pop(0)


def _gpu_pod(name: str, gpu: int = 0, milli: int = 0) -> TracePod:
    return TracePod(name=name, arrival_seconds=0, cpu_milli=1000, memory_mib=1, gpu=gpu, gpu_milli=milli)


def test_the_simulators_list_sorts_spends_shuffles_and_stops_on_the_per_gpu_share() -> None:
    from kwokbench.trace.inflate import simulator_list

    # names out of order: the simulator sorts them first (c < d < e); capacity 2 GPUs x 1.3 = 2600 milli
    pods = [_gpu_pod("e", milli=500), _gpu_pod("c", gpu=1), _gpu_pod("d")]
    # draw d (CPU-only, never stops it), then c (1000 -> 2500), then c again: 2500 + 1000 passes 2600, so it ends
    d = _Draws(order=[2, 0, 1], intn=[1, 0, 0])
    out = simulator_list(pods, 1.3, 2, d)
    assert [p.name for p in out] == ["e", "c", "d", "d-r0", "c-r1"]
    assert d.calls == ["I", "S 3", "N 3", "N 3", "N 3"]
    # the quirk: a two-GPU copy is checked by its per-GPU 1000 against the target (3 GPUs x 1.3 = 3900): from 2500,
    # 2500 + 1000 fits, so it is taken and the list ends at 4500, above the target; the next draw stops it
    two = [_gpu_pod("a", milli=500), _gpu_pod("z", gpu=2)]
    out = simulator_list(two, 1.3, 3, _Draws(order=[0, 1], intn=[1, 0]))
    assert [p.name for p in out] == ["a", "z", "z-r0"]


def test_the_simulators_list_prunes_above_the_target() -> None:
    from kwokbench.trace.inflate import simulator_list

    pods = [_gpu_pod(n, gpu=1) for n in "abcd"]  # 4000 milli against 1 GPU x 1.3 = 1300
    d = _Draws(order=[3, 2, 1, 0], intn=[0, 0, 1])
    out = simulator_list(pods, 1.3, 1, d)
    assert [p.name for p in out] == ["b"]  # d, c, b, a: d and c go, then a (index 1 of b, a)
    assert d.calls == ["I", "S 4", "N 4", "N 3", "N 2"]
