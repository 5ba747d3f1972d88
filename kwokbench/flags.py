"""Command-line flags a scenario gives the control plane's processes: what an entry is, and which flags are not
a scenario's to give.

A variant's ``extra_args`` are kube-scheduler flags (``key=value``); the cluster's are ``component=key=value``
(kwokctl's notation). Every entry reaches its process as ``--key=value``, appended after the flags kwokctl and
kwokbench set, so a repeated flag takes the last value (``v``) or merges (``feature-gates``). The flags kwokbench
or kwokctl set for a kube-scheduler to work at all are refused: overriding them would break the cluster or what
kwokbench measures of it, and each has a setting of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller", "prometheus")
"""The processes of a kwokctl cluster (binary runtime) that take flags."""

_KEY = re.compile(r"^[a-z0-9][a-z0-9.-]*$")

SCHEDULER_OWNED = {
    "config": "the variant's `config:` is the configuration file",
    "kubeconfig": "kwokbench points every scheduler at its cluster",
    "master": "kwokbench points every scheduler at its cluster",
    "secure-port": "kwokbench reads metrics and health from the port it chose",
    "bind-address": "kwokbench reads metrics and health on 127.0.0.1",
    "port": "kwokbench reads metrics and health from the port it chose",
    "address": "kwokbench reads metrics and health on 127.0.0.1",
    "authorization-always-allow-paths": "kwokbench reads /metrics, /healthz and /debug/pprof without credentials",
    "authentication-kubeconfig": "kwokbench reads the scheduler's endpoints without delegated authentication",
    "authorization-kubeconfig": "kwokbench reads the scheduler's endpoints without delegated authorization",
    "kube-api-qps": "the client's limits are `client_qps` / `client_burst` (or cluster.qps_limits)",
    "kube-api-burst": "the client's limits are `client_qps` / `client_burst` (or cluster.qps_limits)",
    "leader-elect": "kwokbench runs one scheduler per profile name, without leader election",
}
"""kube-scheduler flags a scenario may not give, and why (the setting to use instead)."""


def split_flag(entry: str) -> tuple[str, str]:
    """``key=value`` (a leading ``--`` allowed) → (key, value); ValueError saying what is wrong."""
    key, eq, value = entry.removeprefix("--").partition("=")
    if not eq:
        raise ValueError(f"flag {entry!r} is not key=value (a switch is key=true)")
    if not _KEY.match(key):
        raise ValueError(f"flag {entry!r}: {key!r} is not a flag name (lower-case letters, digits, '-' and '.')")
    return key, value


def split_component_flag(entry: str) -> tuple[str, str, str]:
    """``component=key=value`` → (component, key, value); ValueError for an entry kwokctl would drop or misroute."""
    component, eq, rest = entry.partition("=")
    if not eq:
        raise ValueError(f"extra argument {entry!r} is not component=key=value (e.g. kube-apiserver=v=2)")
    if component not in COMPONENTS:
        raise ValueError(f"extra argument {entry!r}: no component {component!r} (one of {', '.join(COMPONENTS)})")
    key, value = split_flag(rest)
    return component, key, value


def scheduler_flag_problem(key: str) -> str | None:
    """Why kube-scheduler's flag ``key`` is not a scenario's to give, or None."""
    if key in SCHEDULER_OWNED:
        return f"--{key} is set by kwokbench ({SCHEDULER_OWNED[key]})"
    if key.startswith("leader-elect-"):
        return f"--{key} is set by kwokbench ({SCHEDULER_OWNED['leader-elect']})"
    return None


def check_scheduler_flags(entries: Iterable[str]) -> list[str]:
    """The entries as ``key=value`` (leading dashes dropped); ValueError for a malformed or owned flag."""
    out = []
    for e in entries:
        key, value = split_flag(e)
        if (why := scheduler_flag_problem(key)) is not None:
            raise ValueError(why)
        out.append(f"{key}={value}")
    return out


def check_component_flags(entries: Iterable[str]) -> list[str]:
    """The entries as ``component=key=value``; ValueError for a malformed one or a kube-scheduler flag it owns."""
    out = []
    for e in entries:
        component, key, value = split_component_flag(e.strip())
        if component == "kube-scheduler" and (why := scheduler_flag_problem(key)) is not None:
            raise ValueError(why)
        out.append(f"{component}={key}={value}")
    return out


def for_component(entries: Iterable[str], component: str) -> list[str]:
    """The ``key=value`` flags of ``component`` among ``component=key=value`` entries, in their order."""
    return [f"{k}={v}" for c, k, v in map(split_component_flag, entries) if c == component]


def patches(entries: Iterable[str]) -> list[dict[str, object]]:
    """kwokctl ``componentsPatches`` giving each entry's component its flag, one patch per component in the order
    first named, the flags in theirs.

    kwokctl v0.8.0's ``--extra-args`` files an entry under the patch at the *flag's* position, not the patch's:
    after a component named twice, the next new component's flags go to another component or crash kwokctl
    (``index out of range``). Written as patches in the configuration file, no flag goes through that code."""
    by: dict[str, list[dict[str, str]]] = {}
    for c, k, v in map(split_component_flag, entries):
        by.setdefault(c, []).append({"key": k, "value": v})
    return [{"name": c, "extraArgs": args} for c, args in by.items()]
