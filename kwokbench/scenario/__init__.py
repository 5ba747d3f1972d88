"""Scenario files: what cluster to build, which scheduler variants to run, and which workload phases to submit at
what arrival process.

The models and their checks are :mod:`.models`; a file is read by :mod:`.loading` (YAML line numbers in every
error, ``--set`` overrides), whose trace workloads :mod:`.traces` expands; :mod:`.duet` makes a duet's repeats,
:mod:`.devices` lays out DRA devices, :mod:`.quantity` reads Kubernetes quantities. The names other layers use are
re-exported here, each imported on first use: a process that needs one small module of the package (a run's pod
watcher, a child process, reads quantities) does not load the loader, every scheduler kind's settings and numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_MODULE = {"apply_overrides": "loading", "load_scenario": "loading", "parse_scenario": "loading",
           "expand_traces": "traces"}
"""The module of each re-exported name that is not in :mod:`.models`."""


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_MODULE.get(name, 'models')}"), name)
    globals()[name] = value
    return value
