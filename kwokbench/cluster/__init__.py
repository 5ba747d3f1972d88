"""Simulated clusters: kwokctl driver, fake nodes, and the API client used on hot paths.

The names below are loaded on first use: the submitter, watch and scrape child processes import only
the submodules they need (``kwokbench.cluster.kubeconfig``, ``.api``), not pandas and the rest of the
cluster lifecycle, which would cost each child ~0.5 s of CPU at every start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, Kwokctl
    from kwokbench.cluster.lifecycle import UpResult, bring_up
    from kwokbench.cluster.nodes import NodeGroup

_WHERE = {"ClusterInfo": "kwokctl", "ClusterOptions": "kwokctl", "Kwokctl": "kwokctl",
          "UpResult": "lifecycle", "bring_up": "lifecycle", "NodeGroup": "nodes"}

__all__ = ["ClusterInfo", "ClusterOptions", "Kwokctl", "NodeGroup", "UpResult", "bring_up"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"kwokbench.cluster.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
