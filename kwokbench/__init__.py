"""kwokbench: scheduler scalability harness for Kubernetes on KWOK clusters.

The data goes one way: scenario → cluster → load and measurements → store → figures → compare → report. The
packages are its layers, lowest first in :data:`LAYERS`: a module imports from its own layer and the ones below,
never from above, and no import makes a circle (``tests/unit/test_structure.py``; ``docs/development/layout.md``
is drawn from this table).
"""

__version__ = "0.1.0"

LAYERS: list[tuple[str, list[str]]] = [
    ("the base: errors, progress, formatting, flags, the toolchain, the trace format",
     ["", "errors", "progress", "formatting", "code_version", "labels", "flags", "toolchain", "trace"]),
    ("the registry of scheduler kinds, the run folders, shards, manifests from templates",
     ["scheduler_kinds", "store", "shard", "manifests"]),
    ("the scenario language; the in-process ceiling", ["scenario", "ceiling"]),
    ("clusters, the load, a live cluster captured", ["cluster", "load", "capture"]),
    ("the components' /metrics", ["metrics"]),
    ("what a run records while it runs", ["measure"]),
    ("a stored run's figures", ["figures"]),
    ("statistics and verdicts over stored runs", ["compare"]),
    ("the history of stored runs", ["history"]),
    ("scheduler kinds and add-ons", ["components"]),
    ("what a scenario will create, before a cluster", ["plan"]),
    ("a run", ["runner"]),
    ("many runs: sweeps, bisection across releases", ["sweep", "bisection"]),
    ("reports; shards merged", ["report", "merge"]),
    ("the command line", ["cli", "__main__"]),
]
"""The layers, lowest first: (what the layer is, the top-level modules and packages in it; "" is this package)."""
