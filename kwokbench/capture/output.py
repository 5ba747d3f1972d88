"""The capture directory: the trace (nodes.csv, pods.csv), a scenario replaying it as it came, a what-if scenario
asking whether bin packing fits more of it, and capture.json.

The files are written into a hidden folder beside the target and moved into place only when all of them
are complete, so a capture that fails leaves nothing behind and a half-written trace is never seen.

capture.json format history: 1 — the first version (what was captured from where and when, the salt or
"names kept", what was skipped and dropped and why); 2 — ``dra``: the DRA objects listed (or why none were), the
devices and the pods' claims captured.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from kwokbench import __version__
from kwokbench.capture.convert import DROPPED, SKIPPED
from kwokbench.errors import ScenarioError
from kwokbench.trace.format import TraceNode, TracePod, write_nodes, write_pods

WHAT_IF_INFLATE = 1.3
"""what-if.yaml resamples the captured pods until they ask for this many times the cluster's GPUs (its CPU without
GPUs): more than it holds, so that the scheduler that packs better places more."""

FORMAT_VERSION = 2
"""Of capture.json."""
NODES, PODS, SCENARIO, WHAT_IF, INFO = "nodes.csv", "pods.csv", "scenario.yaml", "what-if.yaml", "capture.json"
FILES = (NODES, PODS, SCENARIO, WHAT_IF, INFO)
REPLAY_SECONDS = 600
NAMES_KEPT = "names kept"
_PREFIX = "captured-"
_SCENARIO_NAME_MAX = 60


def scenario_name(context: str) -> str:
    """``captured-<context>`` as a scenario name: a lower-case RFC 1123 label of at most 60 characters."""
    slug = re.sub(r"[^a-z0-9]+", "-", context.lower()).strip("-")
    slug = slug[: _SCENARIO_NAME_MAX - len(_PREFIX)].rstrip("-")
    return _PREFIX + (slug or "cluster")


def _scalar(text: str) -> str:
    """``text`` as a YAML scalar: plain where YAML reads it back unchanged, else double-quoted."""
    try:
        plain = yaml.safe_load(f"k: {text}") == {"k": text}
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text)


def scenario_yaml(context: str, when: datetime, nodes: int, pods: int) -> str:
    """A scenario replaying the capture: its nodes as one node group, its pods as one trace workload."""
    description = (f"Captured from {context} on {when.date().isoformat()} by kwokbench capture "
                   f"({nodes} nodes, {pods} pods)")
    return (f"schema_version: 1\n"
            f"name: {scenario_name(context)}\n"
            f"description: {_scalar(description)}\n"
            f"cluster:\n"
            f"  node_groups:\n"
            f"    - name: captured\n"
            f"      from_trace: {{file: {NODES}}}\n"
            f"schedulers:\n"
            f"  - name: default\n"
            f"workloads:\n"
            f"  - name: replay\n"
            f"    trace: {{file: {PODS}, nodes: {NODES}, duration_seconds: {REPLAY_SECONDS}}}\n")


def what_if_yaml(context: str, when: datetime, nodes: int, pods: int, gpus: bool, claims: bool = False) -> str:
    """"Would bin packing fit more of this workload?": the captured pods resampled until they ask for 1.3x the
    cluster's GPUs (CPU for a cluster without GPUs), created in order at a fixed 100/s with no lifetimes so the
    cluster fills, the phase ended once nothing binds for 30 s, the stock scheduler beside bin packing on the
    resource that runs out (the FGD paper's shape; scenarios/alibaba-gpu-2023.yaml). The configurations come from
    kwokbench's own catalogue (`kwokbench/builtin_configs`: nothing to copy beside the capture)."""
    resource, binpack = ("gpu", "gpu-binpack.yaml") if gpus else ("cpu", "binpack.yaml")
    description = (f"What if another scheduler placed the workload captured from {context} on "
                   f"{when.date().isoformat()} ({nodes} nodes, {pods} pods)? Its pods resampled until they request "
                   f"1.3x the cluster's {resource.upper()} capacity, created at 100/s with no lifetimes until none "
                   f"binds for 30 s: the stock scheduler (spreading) against bin packing on {resource.upper()}; "
                   f"compare {resource}_allocation and the pods left pending")
    manager = ("  controller_manager: true       # it makes the pods' DRA claims from their templates\n" if claims
               else "  controller_manager: false      # bare pods: nothing for it to do\n")
    return (f"schema_version: 1\n"
            f"name: {scenario_name(context)[: _SCENARIO_NAME_MAX - 8].rstrip('-')}-what-if\n"
            f"description: {_scalar(description)}\n"
            f"seed: 42\n"
            f"cluster:\n"
            f"  node_groups:\n"
            f"    - name: captured\n"
            f"      from_trace: {{file: {NODES}}}\n"
            f"{manager}"
            f"  pod_lifecycle: none            # no lifetimes: a bound pod holds its node's resources\n"
            f"  node_lease_seconds: 600\n"
            f"schedulers:\n"
            f"  - name: spread                 # the stock kube-scheduler (LeastAllocated)\n"
            f"  - name: binpack\n"
            f"    config: configs/{binpack}   # MostAllocated; kwokbench's own configuration\n"
            f"workloads:\n"
            f"  - name: fill\n"
            f"    trace: {{file: {PODS}, nodes: {NODES}, inflate: {WHAT_IF_INFLATE:g}, seed: 42, rate: 100, "
            f"lifetimes: false}}\n"
            f"    settle_seconds: 30\n"
            f"    timeout_seconds: 1800\n"
            f"gates: [\"{resource}_allocation:2%\"]\n")


def info_document(*, context: str, server: str, when: datetime, namespaces: Sequence[str], listed: Mapping[str, int],
                  nodes: int, pods: int, first_created: datetime | None, salt: str | None,
                  not_ready: Sequence[str], cordoned: Sequence[str], skipped: Mapping[str, int],
                  dropped: Mapping[str, int], dra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """capture.json: where and when from, how many, the salt (or that names were kept), what was left out."""
    return {
        "format_version": FORMAT_VERSION,
        "kwokbench_version": __version__,
        "captured_at": when.isoformat(timespec="seconds"),
        "context": context,
        "server": server,
        "namespaces": list(namespaces) or "all",
        "listed": dict(listed),
        "nodes": nodes,
        "pods": pods,
        "first_pod_created_at": first_created.isoformat(timespec="seconds") if first_created else None,
        "salt": salt if salt is not None else NAMES_KEPT,
        "not_ready_nodes": list(not_ready),
        "cordoned_nodes": list(cordoned),
        "skipped": {k: {"pods": n, "why": SKIPPED[k]} for k, n in sorted(skipped.items())},
        "dropped": {k: {"objects": n, "why": DROPPED[k]} for k, n in sorted(dropped.items())},
        "dra": dict(dra or {}),
        "files": {"nodes": NODES, "pods": PODS, "scenario": SCENARIO},
    }


def check_target(out: Path, force: bool) -> None:
    """Refuse a target that is a file, or a folder holding anything, unless ``force``; before the cluster is read."""
    if out.exists() and not out.is_dir():
        raise ScenarioError(f"-o {out}: exists and is not a folder")
    if out.is_dir() and not force and any(out.iterdir()):
        raise ScenarioError(f"-o {out}: the folder is not empty (--force writes {', '.join(FILES)} into it, "
                            "replacing those files)")


def write_capture(out: Path, nodes: Sequence[TraceNode], pods: Sequence[TracePod], scenario: str, what_if: str,
                  info: Mapping[str, Any], force: bool) -> None:
    """All five files, or none: written beside ``out``, then moved in (``--force``: replacing only these files)."""
    check_target(out, force)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.capture-", dir=out.parent))
    except OSError as e:
        raise ScenarioError(f"cannot write {out}: {e.strerror or e}") from e
    try:
        write_nodes(nodes, tmp / NODES)
        write_pods(pods, tmp / PODS)
        (tmp / SCENARIO).write_text(scenario)
        (tmp / WHAT_IF).write_text(what_if)
        (tmp / INFO).write_text(json.dumps(info, indent=2) + "\n")
        if out.is_dir():
            for name in FILES:
                os.replace(tmp / name, out / name)
        else:
            os.replace(tmp, out)
    except OSError as e:
        raise ScenarioError(f"cannot write {out}: {e.strerror or e}") from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
