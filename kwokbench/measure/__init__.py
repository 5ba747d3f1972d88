"""Measurements: every source of data a run records implements one small protocol, so the runner starts
and stops a list of them and adding a measurement is one file plus one line (:func:`kwokbench.measure.run.for_run`).

The lifecycle, as kube-burner's measurement factory: ``start`` before the first workload phase,
``stop`` after the last one (or when the run fails: it must be safe to call whatever state the run is
in, and write what was recorded), ``collect`` after every ``stop`` and before the cluster is deleted,
for what only the live cluster can still tell (its nodes, events, a Prometheus). Measurements write
raw files into the run directory; figures are derived afterwards by :func:`kwokbench.analyse.analyse`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kwokbench.store import RunDir

if TYPE_CHECKING:
    from kwokbench.cluster.attach import AttachedCluster
    from kwokbench.cluster.kwokctl import ClusterInfo, Kwokctl
    from kwokbench.progress import Reporter
    from kwokbench.scenario import Scenario


@dataclass
class RunContext:
    """What a measurement may use: the run's directory and scenario, its cluster and how it was made."""

    run_dir: Path
    scenario: Scenario
    run_label: str
    cluster: ClusterInfo | AttachedCluster
    kwokctl: Kwokctl
    reporter: Reporter
    attached: AttachedCluster | None = None
    created_cluster: bool = False
    """kwokbench made this cluster for the run (not ``--cluster``, not attached)."""
    scrape_interval: float = 1.0
    prometheus_port: int | None = None
    profile: list[str] = field(default_factory=list)
    """Components whose CPU profile is taken over the first phase (``run --profile``)."""
    schedulers: list[dict[str, Any]] = field(default_factory=list)
    """Schedulers kwokbench started itself (external or concurrent): component, metrics_url, … each."""
    components: list[Any] = field(default_factory=list)
    """The run's components (:mod:`kwokbench.components`): their endpoints and measurements."""
    extras: dict[str, Any] = field(default_factory=dict)


class Measurement(Protocol):
    name: str

    def start(self, ctx: RunContext) -> None:
        """Begin recording; raise :class:`~kwokbench.errors.KwokbenchError` if it cannot."""

    def stop(self) -> None:
        """Stop recording and write the raw files (safe after a failed or partial ``start``)."""

    def collect(self, ctx: RunContext) -> None:
        """After every measurement stopped, before the cluster goes: read what only the cluster can tell."""


class Recorder:
    """A measurement's defaults: it keeps the run directory at ``start`` and does nothing else; a
    measurement overrides the hooks it needs."""

    name = "measurement"

    def __init__(self) -> None:
        self.run_dir: RunDir | None = None

    def start(self, ctx: RunContext) -> None:
        self.run_dir = RunDir(ctx.run_dir)

    def stop(self) -> None:
        pass

    def collect(self, ctx: RunContext) -> None:
        pass
