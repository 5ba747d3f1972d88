"""Scenario files: what cluster to build, which scheduler variants to run, and which workload phases to submit at
what arrival process.

The models and their checks are :mod:`.models`; a file is read by :mod:`.loading` (YAML line numbers in every
error, ``--set`` overrides), whose trace workloads :mod:`.traces` expands; :mod:`.duet` makes a duet's repeats,
:mod:`.devices` lays out DRA devices, :mod:`.quantity` reads Kubernetes quantities. The names other layers use are
re-exported here.
"""

from __future__ import annotations

from kwokbench.scenario.loading import apply_overrides, load_scenario, parse_scenario
from kwokbench.scenario.models import (
    DNS_LABEL,
    Arrival,
    ChaosEvent,
    ClaimSpec,
    ClusterSpec,
    DeviceSpec,
    ExtenderSpec,
    KueueSpec,
    NodeGroupSpec,
    PoissonArrival,
    QpsArrival,
    RampArrival,
    Scenario,
    SubRequestSpec,
    TraceSpec,
    WorkloadSpec,
    json_schema,
    scenario_model,
)
from kwokbench.scenario.traces import expand_traces

__all__ = ["DNS_LABEL", "Arrival", "ChaosEvent", "ClaimSpec", "ClusterSpec", "DeviceSpec", "ExtenderSpec",
           "KueueSpec", "NodeGroupSpec", "PoissonArrival", "QpsArrival", "RampArrival", "Scenario", "SubRequestSpec",
           "TraceSpec", "WorkloadSpec", "apply_overrides", "expand_traces", "json_schema", "load_scenario",
           "parse_scenario", "scenario_model"]
