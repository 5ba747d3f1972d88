"""A scheduler extender (HTTP webhook) implementing the GPU rule of ``plugins/gpufilter`` (``--rule gpu``) or
the reference WASM extension's NodeNumber rule (``--rule nodenumber``: prioritize 10 when the node's name ends
in the pod name's last digit; every node fits).

kube-scheduler POSTs ``ExtenderArgs`` (the pod and, since kwokbench does not declare the extender
node-cache-capable, the full candidate Node objects) to ``/filter`` and ``/prioritize``; the answers
are ``ExtenderFilterResult`` and ``HostPriorityList`` (k8s.io/kube-scheduler/extender/v1, Go field
names as JSON keys). The rule, identical to the Go plugin:

* ``workload-type: GPU-intensive`` pods fit only nodes with allocatable ``nvidia.com/gpu`` > 0;
* ``workload-type: CPU-intensive`` pods need at least 2000m allocatable CPU;
* prioritize: 10 when the node's kind (GPU or not) matches the pod's, else 0.

``kwokbench run`` starts it (``python -m kwokbench.components.extender.server --port N``) for variants with an
``extender:``, wires it into the scheduler configuration, and stores its call counts and handling
time (``GET /stats``) in the run directory. It exits by itself when its parent process goes away,
so a killed kwokbench never leaves it behind.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

import orjson
from aiohttp import web

from kwokbench.figures.placement import WORKLOAD_TYPE, gpu_rule
from kwokbench.scenario.quantity import quantity

GPU = "nvidia.com/gpu"
MAX_PRIORITY = 10


def _allocatable(node: dict[str, Any]) -> dict[str, Any]:
    return (node.get("status") or {}).get("allocatable") or {}


def has_gpu(node: dict[str, Any]) -> bool:
    return quantity(_allocatable(node).get(GPU, 0)) > 0


def _kind(pod: dict[str, Any]) -> str | None:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(WORKLOAD_TYPE)


def fits(pod: dict[str, Any], node: dict[str, Any]) -> str:
    """"" when the pod may run on the node, else why not (the same rule as plugins/gpufilter)."""
    alloc = _allocatable(node)
    return gpu_rule(_kind(pod), quantity(alloc.get("cpu", 0)) * 1000, quantity(alloc.get(GPU, 0)))


def score(pod: dict[str, Any], node: dict[str, Any]) -> int:
    return MAX_PRIORITY if (_kind(pod) == "GPU-intensive") == has_gpu(node) else 0


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def nodenumber_score(pod: dict[str, Any], node: dict[str, Any]) -> int:
    """plugins/nodenumber's rule: 10 when the node's name ends in the pod name's last digit (every node 10
    when the pod's name ends in no digit)."""
    p, n = _name(pod), _name(node)
    if not p or not p[-1].isdigit():
        return MAX_PRIORITY
    return MAX_PRIORITY if n and n[-1] == p[-1] else 0


RULES: dict[str, tuple[Any, Any]] = {"gpu": (fits, score), "nodenumber": (lambda _p, _n: "", nodenumber_score)}
"""Rule name → (filter: "" or why the node does not fit, prioritize: 0…10)."""


def filter_result(args: dict[str, Any], rule: str = "gpu") -> dict[str, Any]:
    pod = args.get("Pod") or args.get("pod") or {}
    nodes = ((args.get("Nodes") or args.get("nodes") or {}).get("items")) or []
    keep, failed = [], {}
    check = RULES[rule][0]
    for n in nodes:
        reason = check(pod, n)
        if reason:
            failed[(n.get("metadata") or {}).get("name", "")] = reason
        else:
            keep.append(n)
    # node allocatable does not change while the pod waits: unresolvable (no preemption attempts)
    return {"Nodes": {"items": keep}, "NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": failed,
            "Error": ""}


def priorities(args: dict[str, Any], rule: str = "gpu") -> list[dict[str, Any]]:
    pod = args.get("Pod") or args.get("pod") or {}
    nodes = ((args.get("Nodes") or args.get("nodes") or {}).get("items")) or []
    rank = RULES[rule][1]
    return [{"Host": (n.get("metadata") or {}).get("name", ""), "Score": rank(pod, n)} for n in nodes]


class Stats:
    def __init__(self) -> None:
        self.calls: dict[str, int] = {"filter": 0, "prioritize": 0}
        self.seconds: dict[str, float] = {"filter": 0.0, "prioritize": 0.0}
        self.nodes_rejected = 0
        self.errors = 0


def make_app(stats: Stats, rule: str = "gpu") -> web.Application:
    def handler(verb: str) -> Any:
        async def handle(request: web.Request) -> web.Response:
            body = await request.read()
            t = time.perf_counter()
            try:
                args = orjson.loads(body)
                if verb == "filter":
                    res: Any = filter_result(args, rule)
                    stats.nodes_rejected += len(res["FailedAndUnresolvableNodes"])
                else:
                    res = priorities(args, rule)
            except (ValueError, AttributeError, TypeError) as e:
                stats.errors += 1
                res = {"Error": f"kwokbench extender: bad request: {e}"} if verb == "filter" else []
            out = orjson.dumps(res)
            stats.calls[verb] += 1
            stats.seconds[verb] += time.perf_counter() - t
            return web.Response(body=out, content_type="application/json")
        return handle

    async def get_stats(_: web.Request) -> web.Response:
        return web.json_response({"calls": stats.calls, "handling_seconds": stats.seconds,
                                  "nodes_rejected": stats.nodes_rejected, "errors": stats.errors})

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(client_max_size=256 * 1024**2)
    app.router.add_post("/filter", handler("filter"))
    app.router.add_post("/prioritize", handler("prioritize"))
    app.router.add_get("/stats", get_stats)
    app.router.add_get("/healthz", healthz)
    return app


async def _serve(host: str, port: int, parent: int, rule: str = "gpu") -> None:
    runner = web.AppRunner(make_app(Stats(), rule), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    while os.getppid() == parent:  # orphaned (kwokbench killed): exit
        await asyncio.sleep(1)
    await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kwokbench.components.extender.server",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rule", choices=sorted(RULES), default="gpu")
    ap.add_argument("--parent", type=int, default=os.getppid(),
                    help="exit when this process (the one that started it) goes away")
    a = ap.parse_args(argv)
    try:
        asyncio.run(_serve(a.host, a.port, a.parent, a.rule))
    except KeyboardInterrupt:
        pass
    except OSError as e:
        print(f"error: extender cannot listen on {a.host}:{a.port}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
