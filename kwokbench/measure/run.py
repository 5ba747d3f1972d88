"""The measurements a run takes, in start order: a new measurement is its own file in this package plus one line
here."""

from __future__ import annotations

from kwokbench.measure import Measurement, RunContext
from kwokbench.measure.chaos import ChaosEvents
from kwokbench.measure.claims import ClaimTimeline
from kwokbench.measure.cluster_state import ClusterState
from kwokbench.measure.host import HostEvidence
from kwokbench.measure.profile import ComponentProfiles
from kwokbench.measure.prometheus import PrometheusCrossCheck
from kwokbench.measure.scrape import ComponentScrapes
from kwokbench.measure.watch import PodTimeline


def for_run(ctx: RunContext) -> list[Measurement]:
    """The measurements of a run, in start order (stopped in reverse); each component adds its own."""
    out: list[Measurement] = [PodTimeline()]
    if ctx.scrape_interval > 0:
        out.append(ComponentScrapes())
    for c in ctx.components:
        out += c.measurements()
    out.append(ClusterState())
    if ctx.prometheus_port and ctx.created_cluster:
        out.append(PrometheusCrossCheck())
    if any(w.has_claims for w in ctx.scenario.workloads):
        out.append(ClaimTimeline())
    if ctx.scenario.chaos:
        out.append(ChaosEvents())
    out.append(HostEvidence())
    if ctx.profile:
        out.append(ComponentProfiles(ctx.profile))
    return out
