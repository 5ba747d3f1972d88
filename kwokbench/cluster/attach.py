"""Bring your own cluster: attach kwokbench to an existing cluster instead of creating one.

``kwokbench up --kubeconfig FILE [--context C]`` checks that the apiserver answers, starts a kwok
controller *locally* against it that manages only nodes carrying this attachment's label, and creates
fake nodes with that label, kwok's annotation, and the taint ``kwok.x-k8s.io/node=fake:NoSchedule`` so
that no real workload lands on them. With ``--kwok-controllers K`` it starts K controllers, each selecting
one partition of the fake nodes as well (:mod:`kwokbench.cluster.kwok_controllers`). Runs on the
attachment (``run --cluster NAME``) label every object with the attachment as well as the run, and pin
their pods to the fake nodes. ``down NAME`` deletes exactly the objects carrying the attachment's label
(pods, Jobs, PodGroups, namespaces it created, nodes) and stops its kwok controllers; nothing else is
touched.

The attachment's state lives in ``$KWOKBENCH_HOME/attached/<name>/attach.json`` (the kubeconfig's
*path*; a kubeconfig is only written there, 0600, when a ``--context`` other than the file's current
one must be handed to kwok, which has no ``--context`` flag).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil
import yaml

from kwokbench.cluster.api import Api
from kwokbench.cluster.kubeconfig import Credentials, load_kubeconfig
from kwokbench.cluster.kwok_controllers import attached_argv, check_count, component_name
from kwokbench.cluster.kwokctl import KWOK_NODE_ANNOTATION, free_ports, validate_name
from kwokbench.cluster.nodes import NodeGroup, NodesResult, create_nodes
from kwokbench.cluster.objects import delete_labelled
from kwokbench.errors import ApiError, ClusterError
from kwokbench.progress import Reporter, Silent

ATTACH_LABEL = "kwokbench.io/attached"
FAKE_TAINT = {"key": KWOK_NODE_ANNOTATION, "value": "fake", "effect": "NoSchedule"}


@dataclass(frozen=True)
class AttachedCluster:
    name: str
    dir: Path
    kubeconfig: Path
    context: str | None
    server: str
    kwok_port: int
    kwok_pid: int = 0
    kwok_kubeconfig: str = ""
    more_kwok: tuple[tuple[int, int], ...] = ()
    """(pid, port) of the kwok controllers of partitions 1… (``up --kwok-controllers K``); the first is 0."""

    def credentials(self) -> Credentials:
        return load_kubeconfig(self.kubeconfig, self.context)

    def metrics_endpoints(self) -> dict[str, str]:
        """Only what an existing cluster exposes to a client: the apiserver's /metrics (when RBAC allows)
        and the local kwok controller. The scheduler's and controller-manager's are reported missing."""
        return {"kube-apiserver": f"{self.server}/metrics", "kwok-controller": f"http://127.0.0.1:{self.kwok_port}/metrics",
                **{component_name(i): f"http://127.0.0.1:{port}/metrics"
                   for i, (_, port) in enumerate(self.more_kwok, start=1)}}

    @property
    def kwok_controllers(self) -> int:
        return 1 + len(self.more_kwok)

    @property
    def labels(self) -> dict[str, str]:
        """On everything kwokbench creates there, and the nodeSelector of its pods (its nodes carry it)."""
        return {ATTACH_LABEL: self.name}


def state_dir(home: Path) -> Path:
    return home / "attached"


def names(home: Path) -> list[str]:
    d = state_dir(home)
    return sorted(p.name for p in d.iterdir() if (p / "attach.json").exists()) if d.exists() else []


def get(home: Path, name: str) -> AttachedCluster | None:
    f = state_dir(home) / name / "attach.json"
    if not f.exists():
        return None
    doc = json.loads(f.read_text())
    return AttachedCluster(**{**doc, "dir": Path(doc["dir"]), "kubeconfig": Path(doc["kubeconfig"]),
                              "more_kwok": tuple((int(p), int(q)) for p, q in doc.get("more_kwok") or ())})


def describe(kubeconfig: Path, context: str | None) -> tuple[str, str]:
    """(context name, server) the kubeconfig points at: what the user is asked to confirm."""
    try:
        doc = yaml.safe_load(kubeconfig.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ClusterError(f"cannot read kubeconfig {kubeconfig}: {e}") from e
    ctx = context or doc.get("current-context") or ""
    creds = load_kubeconfig(kubeconfig, context)
    creds.forget()  # only its server was wanted
    return ctx, creds.server


async def _check_reachable(creds: Credentials, kubeconfig: Path, context: str) -> str:
    try:
        async with Api(creds, timeout=10) as api:
            version = await api.json("GET", "/version")
            await api.json("GET", "/api/v1/nodes", params={"limit": "1"})
    except ApiError as e:
        raise ClusterError(f"cannot reach the apiserver {creds.server} of kubeconfig {kubeconfig} "
                           f"(context {context or 'current'}): {e}") from e
    return str(version.get("gitVersion", "?"))


def attach(home: Path, kwok_binary: Path, stages: Path, kubeconfig: Path, context: str | None, name: str,
           groups: list[NodeGroup], reporter: Reporter | None = None,
           kwok_controllers: int = 1) -> tuple[AttachedCluster, NodesResult | None, str]:
    rep = reporter or Silent()
    validate_name(name)
    k = check_count(kwok_controllers)
    if get(home, name) is not None:
        raise ClusterError(f"attachment {name!r} already exists (use another --name, or `kwokbench down {name}`)")
    if not stages.is_file():
        raise ClusterError(f"kwok's stages {stages} are missing: run `kwokbench tools install --force`")
    ctx, server = describe(kubeconfig, context)
    creds = load_kubeconfig(kubeconfig, context)
    version = asyncio.run(_check_reachable(creds, kubeconfig, ctx))
    d = state_dir(home) / name
    d.mkdir(parents=True)
    kwok_kubeconfig = kubeconfig
    if context:  # kwok has no --context: hand it a copy whose current context is the chosen one
        doc = yaml.safe_load(kubeconfig.read_text())
        doc["current-context"] = context
        kwok_kubeconfig = d / "kubeconfig.yaml"
        fd = os.open(kwok_kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(doc, f)
    ports = free_ports(k)
    procs = []
    for i, port in enumerate(ports):
        args = attached_argv(kwok_binary, kwok_kubeconfig, stages, f"{ATTACH_LABEL}={name}", i, k, port)
        with (d / _log_name(i)).open("ab") as log:
            procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True))
    info = AttachedCluster(name, d, kubeconfig.resolve(), context, server, ports[0], procs[0].pid,
                           str(kwok_kubeconfig) if kwok_kubeconfig != kubeconfig else "",
                           tuple((p.pid, port) for p, port in zip(procs[1:], ports[1:], strict=True)))
    _save(info)
    try:
        time.sleep(0.5)
        for i, proc in enumerate(procs):
            if proc.poll() is not None:
                tail = (d / _log_name(i)).read_text(errors="replace").strip().splitlines()[-1:] or [""]
                raise ClusterError(f"the kwok controller{f' of partition {i}' if k > 1 else ''} exited at start "
                                   f"(exit {proc.returncode}): {tail[0][:300]} (log: {d / _log_name(i)})")
        nodes = None
        marked = [NodeGroup(g.name, g.count, g.template, {**g.params, "labels": {**(g.params.get("labels") or {}),
                                                                                 ATTACH_LABEL: name},
                                                          "taints": [*(g.params.get("taints") or []), FAKE_TAINT]},
                            prefix=f"kb-{name}-{g.name}", devices=g.devices)
                  for g in groups]
        total = sum(g.count for g in groups)
        if total:
            with rep.counter(f"creating {total} fake nodes in {server}", total) as advance:
                nodes = asyncio.run(create_nodes(creds, marked, on_ready=advance, partitions=k))
    except BaseException:
        detach(home, name)
        raise
    return info, nodes, version


def _log_name(partition: int) -> str:
    return "kwok.log" if partition == 0 else f"kwok-{partition}.log"


def _save(info: AttachedCluster) -> None:
    doc: dict[str, Any] = {**asdict(info), "dir": str(info.dir), "kubeconfig": str(info.kubeconfig)}
    tmp = info.dir / "attach.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2))
    tmp.replace(info.dir / "attach.json")


async def _delete_labelled(creds: Credentials, selector: str) -> dict[str, int]:
    """The run objects (pods, Jobs, PodGroups), then the nodes and namespaces kwokbench labelled."""
    counts = await delete_labelled(creds, selector)
    async with Api(creds) as api:
        for kind, path in (("nodes", "/api/v1/nodes"), ("namespaces", "/api/v1/namespaces")):
            items = (await api.json("GET", path, params={"labelSelector": selector})).get("items") or []
            for it in items:
                await api.raw("DELETE", f"{path}/{it['metadata']['name']}")
            counts[kind] = len(items)
    return counts


def detach(home: Path, name: str, reporter: Reporter | None = None) -> dict[str, int]:
    """Delete what the attachment labelled, stop its kwok controller, forget it."""
    rep = reporter or Silent()
    info = get(home, name)
    if info is None:
        raise ClusterError(f"no attachment named {name!r}")
    counts: dict[str, int] = {}
    try:
        with rep.status(f"deleting what kwokbench created in {info.server} (label {ATTACH_LABEL}={name})"):
            counts = asyncio.run(_delete_labelled(info.credentials(), f"{ATTACH_LABEL}={name}"))
    finally:
        for pid in (info.kwok_pid, *(p for p, _ in info.more_kwok)):
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if "kwok" in p.name():
                    p.terminate()
                    try:
                        p.wait(10)
                    except psutil.TimeoutExpired:
                        p.kill()
        shutil.rmtree(info.dir, ignore_errors=True)
    return counts
