"""Shaping a trace's pod list: inflate it to a multiple of the cluster's capacity, rescale its times, cut it.

``inflate`` does what the FGD paper's simulator does with its ``tune`` ratio (1.3 in the paper;
hkust-adsl/kubernetes-scheduler-simulator, ``TunePodsByNodeTotalResource`` in pkg/simulator): while the
pods' summed GPU request is below factor x the cluster's GPU capacity, draw a pod of the original list
uniformly with replacement and append a copy; the first draw that would pass the target ends it, so the
total ends below the target by less than that pod's request, never above it. A list already above the
target is pruned instead, removing pods drawn at random until it is not. GPU request = whole GPUs +
gpu_milli / 1000; a CPU-only trace is inflated on CPU (millicores) the same way. The simulator compares
a copy's per-GPU share, not its total, with the target, which lets a multi-GPU copy overshoot; here the
total counts.

Order and time: the original pods keep their order and arrival times, the copies follow in the order
drawn. The simulator schedules pods in list order and has no clock; kwokbench replays arrivals, so each
copy arrives after the previous pod by the gap its original had to its own predecessor in the trace:
the copies continue the trace with its own distribution of inter-arrival gaps, and arrival order is
list order. A copy keeps its original's lifetime and is named ``<original>-r<k>``, k counting copies
from 0, so names stay unique. Draws come from ``numpy.random.default_rng(seed)``: the same seed gives
the same pods, on any machine.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np

from kwokbench.errors import ScenarioError
from kwokbench.trace.format import MILLI_PER_GPU, TraceNode, TracePod

Resource = Literal["gpu", "cpu"]


def request_milli(p: TracePod, resource: Resource) -> int:
    """A pod's request in thousandths: milli-GPUs (whole GPUs x 1000 + gpu_milli) or millicores."""
    return p.gpu * MILLI_PER_GPU + p.gpu_milli if resource == "gpu" else p.cpu_milli


def capacity(nodes: Sequence[TraceNode], resource: Resource) -> float:
    """The cluster's capacity in GPUs or CPU cores, the unit ``inflate`` takes."""
    return float(sum(n.gpu for n in nodes) if resource == "gpu" else sum(n.cpu_milli for n in nodes) / 1000)


def inflation_resource(pods: Sequence[TracePod]) -> Resource:
    """GPU for a trace with any GPU request, CPU for a CPU-only one."""
    return "gpu" if any(p.gpu or p.gpu_milli for p in pods) else "cpu"


def inflate(pods: Sequence[TracePod], factor: float, capacity: float, seed: int,
            resource: Resource = "gpu") -> list[TracePod]:
    """Pods whose summed request approaches ``factor`` x ``capacity`` (GPUs, or CPU cores) from below."""
    if factor <= 0 or capacity <= 0:
        raise ScenarioError(f"inflate: factor and {resource} capacity must be > 0 (got {factor:g} and {capacity:g})")
    requests = [request_milli(p, resource) for p in pods]
    if sum(requests) == 0:
        raise ScenarioError(f"inflate: no pod requests any {resource}; inflate on "
                            f"{'cpu' if resource == 'gpu' else 'gpu'} instead")
    target = factor * capacity * 1000
    rng = np.random.default_rng(seed)
    total = sum(requests)
    if total > target:
        return _prune(list(pods), requests, total, target, rng)
    out = list(pods)
    gaps = [0.0] + [b.arrival_seconds - a.arrival_seconds for a, b in itertools.pairwise(pods)]
    arrival = pods[-1].arrival_seconds
    k = 0
    while True:
        i = int(rng.integers(len(pods)))
        if total + requests[i] > target:
            return out
        arrival += max(gaps[i], 0.0)
        out.append(dataclasses.replace(pods[i], name=f"{pods[i].name}-r{k}", arrival_seconds=arrival))
        total += requests[i]
        k += 1


def _prune(pods: list[TracePod], requests: list[int], total: int, target: float,
           rng: np.random.Generator) -> list[TracePod]:
    """Remove pods drawn at random until the total is at most the target (the simulator's tuning down)."""
    while total > target:
        i = int(rng.integers(len(pods)))
        total -= requests.pop(i)
        pods.pop(i)
    return pods


def scale_times(pods: Sequence[TracePod], time_scale: float | None = None,
                duration_seconds: float | None = None) -> list[TracePod]:
    """Multiply arrivals and lifetimes by ``time_scale``, or by what puts the last arrival at ``duration_seconds``.

    Lifetimes scale with arrivals so that the pods alive at once stay the same set: 149 days of the
    Alibaba trace at ``time_scale=0.001`` replay in 3.6 hours with the same overlap between pods.
    """
    if (time_scale is None) == (duration_seconds is None):
        raise ScenarioError("scale_times: give time_scale or duration_seconds, not both or neither")
    if time_scale is None:
        last = max((p.arrival_seconds for p in pods), default=0.0)
        if last <= 0 or not duration_seconds or duration_seconds <= 0:
            raise ScenarioError(f"scale_times: cannot stretch arrivals ending at {last:g} s to {duration_seconds} s")
        time_scale = duration_seconds / last
    if time_scale <= 0:
        raise ScenarioError(f"scale_times: time_scale must be > 0, got {time_scale:g}")
    return [dataclasses.replace(p, arrival_seconds=p.arrival_seconds * time_scale,
                                lifetime_seconds=None if p.lifetime_seconds is None
                                else p.lifetime_seconds * time_scale)
            for p in pods]


def shuffle(pods: Sequence[TracePod], seed: int) -> list[TracePod]:
    """The pods in an order shuffled with ``seed`` (the FGD paper's experiment shuffles its pod list before
    appending the resampled pods). Arrival times are left as they were: a shuffled list is replayed at a rate."""
    order = np.random.default_rng(seed).permutation(len(pods))
    return [pods[int(i)] for i in order]


class GoDraws(Protocol):
    """Go's ``math/rand`` after ``rand.Seed(seed)`` (:class:`kwokbench.toolchain.gorand.GoRand`)."""

    def next_int(self) -> int: ...
    def intn(self, n: int) -> int: ...
    def shuffle(self, n: int) -> list[int]: ...


def per_gpu_milli(p: TracePod) -> int:
    """The simulator's per-GPU request: 1000 for a pod of whole GPUs, its share for a shared one, 0 for none."""
    return MILLI_PER_GPU if p.gpu else p.gpu_milli


def simulator_list(pods: Sequence[TracePod], factor: float, capacity: float, draws: GoDraws) -> list[TracePod]:
    """The FGD paper's simulator's pod list for the seed ``draws`` was seeded with, draw for draw (its
    ``--shuffle-pod`` and ``tune``; hkust-adsl/kubernetes-scheduler-simulator, restated): the pods sorted by name;
    one ``rand.Int()`` spent; ``rand.Shuffle`` of the sorted list; then, below ``factor`` x ``capacity`` GPUs,
    ``rand.Intn`` over the sorted list draws a pod to append, until the first draw whose *per-GPU* request would
    pass the target (that draw is dropped; a multi-GPU copy may so pass it), or, above the target, removes pods
    drawn at random from the list until it is not. Copies are named ``<original>-r<k>``."""
    by_name = sorted(pods, key=lambda p: p.name)
    draws.next_int()  # the simulator spends one value as a log line's argument before it shuffles
    out = [by_name[i] for i in draws.shuffle(len(by_name))]
    target = factor * capacity * 1000
    total = sum(request_milli(p, "gpu") for p in out)
    if total < target:
        k = 0
        while True:
            p = by_name[draws.intn(len(by_name))]
            if total + per_gpu_milli(p) > target:
                return out
            total += request_milli(p, "gpu")
            out.append(dataclasses.replace(p, name=f"{p.name}-r{k}"))
            k += 1
    while total > target:
        total -= request_milli(out.pop(draws.intn(len(out))), "gpu")
    return out


def limit(pods: Sequence[TracePod], count: int) -> list[TracePod]:
    """The first ``count`` pods in list (arrival) order: a short replay of a long trace's start."""
    if count < 1:
        raise ScenarioError(f"limit: count must be >= 1, got {count}")
    return list(pods[:count])
