"""A faulty scheduler, to prove kwokbench's checks catch what they claim (issue #53): it gives **one** DRA device to
every claim. It serves the pods of ``--scheduler-name``: each pending pod's claims (a claim of its own, made by
kube-controller-manager from the pod's template, or a claim it names) are allocated the first device of the first
ResourceSlice of ``--driver`` and reserved for the pod, which is then bound to that device's node. A shareable
device (``allowMultipleAllocations``) is given as a share each time, consuming what the claim's request asks
(``capacity.requests``), however little is left. kwokbench runs it as an ``external`` scheduler
(tests/e2e/test_dra.py); the run's summary must report the device given twice (or a shared one consumed beyond its
capacity), and the gate must fail. Ends on SIGTERM, as kwokbench stops an external scheduler.

    python tests/support/double_booker.py --kubeconfig K --scheduler-name N --driver gpu.kwokbench.io
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import uuid
from pathlib import Path
from typing import Any

from kwokbench.cluster.api import Api
from kwokbench.cluster.kubeconfig import load_kubeconfig

RESOURCE = "/apis/resource.k8s.io/v1"


def _claim_names(pod: dict[str, Any]) -> list[str] | None:
    """The names of the pod's claims, or None while the controller has not made those from its templates yet."""
    names = []
    made = {s.get("name"): s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses")
            or []}
    for rc in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = rc.get("resourceClaimName") or made.get(rc.get("name"))
        if not name:
            return None
        names.append(name)
    return names


def _result(request: dict[str, Any], driver: str, pool: str, name: str, shareable: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"request": request["name"], "driver": driver, "pool": pool, "device": name}
    if shareable:  # a share, consuming what the request asks, whatever the device has left
        out["shareID"] = str(uuid.uuid4())
        asks = ((request.get("exactly") or {}).get("capacity") or {}).get("requests") or {}
        if asks:
            out["consumedCapacity"] = dict(asks)
    return out


async def book(api: Api, pod: dict[str, Any], device: tuple[str, str, str, str, bool]) -> bool:
    driver, pool, name, node, shareable = device
    meta = pod["metadata"]
    claims = _claim_names(pod)
    if claims is None:
        return False
    for c in claims:
        path = f"{RESOURCE}/namespaces/{meta['namespace']}/resourceclaims/{c}"
        claim = await api.json("GET", path)
        requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
        claim["status"] = {
            "allocation": {"devices": {"results": [_result(r, driver, pool, name, shareable) for r in requests]},
                           "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                               {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
            "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}]}
        await api.json("PUT", f"{path}/status", claim)
    await api.json("POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    return True


async def serve(kubeconfig: Path, scheduler_name: str, driver: str, stop: asyncio.Event) -> None:
    async with Api(load_kubeconfig(kubeconfig)) as api:
        slices = (await api.json("GET", f"{RESOURCE}/resourceslices"))["items"]
        s = next(x["spec"] for x in slices if x["spec"].get("driver") == driver and x["spec"].get("devices"))
        first = s["devices"][0]
        device = (driver, s["pool"]["name"], first["name"], s["nodeName"], bool(first.get("allowMultipleAllocations")))
        done: set[str] = set()
        while not stop.is_set():
            pods = (await api.json("GET", "/api/v1/pods", params={
                "fieldSelector": f"spec.schedulerName={scheduler_name},spec.nodeName="}))["items"]
            for pod in pods:
                uid = pod["metadata"]["uid"]
                if uid not in done and not pod["metadata"].get("deletionTimestamp") and await book(api, pod, device):
                    done.add(uid)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kubeconfig", type=Path, required=True)
    ap.add_argument("--scheduler-name", required=True)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--version", action="version", version="double-booker 1")
    a = ap.parse_args()

    async def run() -> None:
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await serve(a.kubeconfig, a.scheduler_name, a.driver, stop)

    asyncio.run(run())


if __name__ == "__main__":
    main()
