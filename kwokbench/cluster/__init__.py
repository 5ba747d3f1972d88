"""Simulated clusters: kwokctl driver, fake nodes, and the API client used on hot paths."""

from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, Kwokctl
from kwokbench.cluster.lifecycle import UpResult, bring_up
from kwokbench.cluster.nodes import NodeGroup

__all__ = ["ClusterInfo", "ClusterOptions", "Kwokctl", "NodeGroup", "UpResult", "bring_up"]
