"""``kwokbench capture``: a live cluster's nodes and pods as a kwokbench trace, with a scenario replaying it.

Three steps, one module each: :mod:`.live` lists the nodes and pods (LIST calls only, never a write),
:mod:`.convert` turns the API's objects into trace rows (pure), :mod:`.output` writes the directory
(all files or none). Between the last two, names and label values are replaced by salted hashes
(:mod:`kwokbench.trace.anonymise`) unless the user keeps them; the salt is random unless given, and is
written to capture.json so that a later capture can be anonymised alike.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kwokbench.capture import output
from kwokbench.capture.convert import anonymise, convert
from kwokbench.capture.live import read_cluster
from kwokbench.cluster.attach import describe
from kwokbench.cluster.kubeconfig import load_kubeconfig
from kwokbench.errors import ClusterError, ScenarioError
from kwokbench.progress import Reporter, Silent
from kwokbench.scenario import DNS_LABEL

SALT_BYTES = 16
"""A generated salt: 32 hex digits."""


@dataclass(frozen=True)
class CaptureResult:
    out: Path
    info: dict[str, Any]
    """What capture.json holds."""
    salt: str | None
    """None when names were kept."""
    salt_generated: bool


def _check_namespaces(namespaces: Sequence[str]) -> list[str]:
    for ns in namespaces:
        if len(ns) > 63 or not re.match(DNS_LABEL, ns):
            raise ScenarioError(f"--namespace {ns!r}: not a namespace name (a lower-case RFC 1123 label)")
    return list(dict.fromkeys(namespaces))


def capture(kubeconfig: Path, context: str | None, out: Path, namespaces: Sequence[str] = (),
            salt: str | None = None, keep_names: bool = False, force: bool = False,
            reporter: Reporter | None = None) -> CaptureResult:
    """Read the cluster ``kubeconfig`` (``context``) points at and write its trace into ``out``."""
    rep = reporter or Silent()
    wanted = _check_namespaces(namespaces)
    if keep_names and salt is not None:
        raise ScenarioError("--salt anonymises names; --keep-names keeps them: give one or the other")
    if salt == "":
        raise ScenarioError("--salt: an empty salt would let anyone recompute the hashes; give a secret one")
    if not kubeconfig.is_file():
        raise ScenarioError(f"--kubeconfig {kubeconfig}: no such file")
    output.check_target(out, force)
    ctx, server = describe(kubeconfig, context)
    where = f"context {ctx}" if ctx else f"kubeconfig {kubeconfig}"
    creds = load_kubeconfig(kubeconfig, context)
    try:
        with rep.status(f"listing the nodes and pods of {server or kubeconfig}"):
            listed = asyncio.run(read_cluster(creds, wanted, where))
    finally:
        creds.forget()
    nodes, pods = listed.nodes, listed.pods
    try:
        got = convert(nodes, pods, listed.dra)
    except ValueError as e:  # an object no apiserver would return
        raise ClusterError(f"{server}: an object kwokbench cannot read: {e}") from e
    left_out = ", ".join(f"{n} {k}" for k, n in sorted(got.skipped.items()))
    if not got.nodes:
        raise ClusterError(f"{server}: the cluster has no nodes; nothing to capture")
    if not got.pods:
        raise ClusterError(f"{server}: no pods to capture in {', '.join(wanted) or 'any namespace'}"
                           + (f" (skipped: {left_out})" if left_out else ""))
    generated = not keep_names and salt is None
    used = None if keep_names else (salt or secrets.token_hex(SALT_BYTES))
    if used is not None:
        got = anonymise(got, used)
    when = datetime.now(UTC)
    info = output.info_document(
        context=ctx, server=urlsplit(server).netloc or server, when=when, namespaces=wanted,
        listed={"nodes": len(nodes), "pods": len(pods)}, nodes=len(got.nodes), pods=len(got.pods),
        first_created=datetime.fromtimestamp(got.start, UTC) if got.start is not None else None, salt=used,
        not_ready=got.not_ready, cordoned=got.cordoned, skipped=got.skipped, dropped=got.dropped,
        dra={"listed": {k: len(v) for k, v in listed.dra.items()}, "not_listed": listed.dra_note,
             "devices": sum(int(d["count"]) for n in got.nodes for d in n.devices),
             "pods_with_claims": sum(1 for p in got.pods if p.claims)})
    scenario = output.scenario_yaml(ctx or kubeconfig.stem, when, len(got.nodes), len(got.pods))
    what_if = output.what_if_yaml(ctx or kubeconfig.stem, when, len(got.nodes), len(got.pods),
                                  gpus=any(n.gpu for n in got.nodes), claims=any(p.claims for p in got.pods))
    output.write_capture(out, got.nodes, got.pods, scenario, what_if, info, force)
    return CaptureResult(out, info, used, generated)
