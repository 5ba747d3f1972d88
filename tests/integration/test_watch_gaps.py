"""Gaps are data: a watch whose resourceVersion expired (410) relists, and a claim deleted meanwhile is not in the
new list. Against a real HTTP server on port 0 speaking the apiserver's list and watch, through the real client
and ResourceClaim record: the gap is recorded with the claim that vanished in it, from the moment the watch's stream
ended (not the later 410's), the claim is released at the gap's start, and the next claim on its device is not
reported as given twice (it was, before: the vanished claim held its device for ever). A real apiserver's 410 —
etcd compacted while it was down — is made in tests/e2e/test_dra.py."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kwokbench.cluster.api import Api
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.errors import StoreError
from kwokbench.figures.claims import claims_section
from kwokbench.labels import RUN_LABEL
from kwokbench.measure.claims import COLUMNS, ClaimTimeline
from tests.support.http import Quiet, serving

RUN = "r1"


def claim(name: str, device: str | None) -> dict[str, Any]:
    status = {"allocation": {"devices": {"results": [{"driver": "gpu.example.com", "pool": "n0", "device": device,
                                                      "request": "gpu"}]}}} if device else {}
    return {"metadata": {"namespace": "ns", "name": name, "labels": {RUN_LABEL: RUN}, "resourceVersion": "1"},
            "status": status}


class Apiserver:
    """Lists: first A (holding gpu-0) and B; after the 410, B and C (holding gpu-0: A was deleted in the gap).
    The first watch's stream ends at once, the second is refused (HTTP 500: the client waits 0.5 s), the third
    answers 410 Gone in its stream, as the apiserver does; later ones close at once (the client watches again)."""

    def __init__(self) -> None:
        self.lists = 0
        self.watches = 0
        self.relisted = threading.Event()
        self.stream_ended = 0.0
        self.refused = 0.0


@pytest.fixture
def apiserver() -> Iterator[tuple[str, Apiserver]]:
    state = Apiserver()

    class Handler(Quiet):
        def do_GET(self) -> None:
            if "watch=1" in self.path:
                state.watches += 1
                if state.watches == 1:
                    state.stream_ended = time.time()
                    self.send(200, b"")
                elif state.watches == 2:
                    state.refused = time.time()
                    self.send(500, json.dumps({"kind": "Status", "code": 500, "message": "restarting"}).encode())
                elif state.watches == 3:  # as kube-apiserver's watch cache answers a stale resourceVersion
                    self.send(200, json.dumps({"type": "ERROR", "object": {
                        "kind": "Status", "code": 410, "reason": "Expired",
                        "message": "too old resource version: 1 (5)"}}).encode() + b"\n")
                else:
                    time.sleep(0.05)
                    self.send(200, b"")
                return
            state.lists += 1
            items = [claim("a", "gpu-0"), claim("b", None)] if state.lists == 1 else \
                [claim("b", None), claim("c", "gpu-0")]
            self.send(200, json.dumps({"kind": "ResourceClaimList", "items": items,
                                       "metadata": {"resourceVersion": str(10 * state.lists)}}).encode())
            if state.lists == 2:
                state.relisted.set()

    with serving(Handler) as url:
        yield url, state


def test_a_claim_deleted_in_a_watch_gap_is_released_there_and_not_given_twice(
        apiserver: tuple[str, Apiserver]) -> None:
    url, state = apiserver
    record = ClaimTimeline()
    record.run_label = RUN

    async def watch() -> None:
        stop = asyncio.Event()
        async with Api(Credentials(url, None, None, None)) as api:
            task = asyncio.create_task(api.watch(record.path, record.event, stop, on_error=record.error,
                                                 on_listed=record.listed, on_gone=record.gone))
            while not state.relisted.is_set():
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)  # the relist handled, a watch or two after it
            stop.set()
            await task

    asyncio.run(asyncio.wait_for(watch(), 30))
    assert state.lists == 2 and len(record.errors) == 2 and "expired (410), relisting" in record.errors[1]
    [gap] = record.gaps
    # blind from the first stream's end (after the server ended it, before it refused the reconnect: no slack a
    # slow host could overrun), through the refused reconnect's 0.5 s wait, to the relist
    assert gap["vanished"] == ["ns/a"] and state.stream_ended <= gap["from"] < state.refused
    assert gap["seconds"] >= 0.5
    rows = {r["name"]: r for r in record.rows.values()}
    assert rows["a"]["gap"] is True and rows["a"]["released"] == pytest.approx(gap["from"])
    # the gap closes when the relist's snapshot was taken: the moment its objects carry, not after they were handled
    assert rows["c"]["allocated"] == gap["to"] and rows["b"].get("gap") is None
    section = claims_section(pd.DataFrame(list(record.rows.values()), columns=COLUMNS))
    assert section["devices_given_twice"] == {} and section["released_in_gap"] == 1
    # without the gap's bookkeeping the claim that vanished would hold gpu-0 for ever: given twice
    rows["a"]["released"] = rows["a"]["deleted"] = None
    again = claims_section(pd.DataFrame(list(record.rows.values()), columns=COLUMNS))
    assert again["devices_given_twice"] == {"gpu.example.com/n0/gpu-0": 2}


def test_a_runs_watch_gaps_reach_its_summary_and_console_table(tmp_path: Path) -> None:
    """What the record wrote beside its table is the summary's ``watch_gaps`` and a row of the console table; a
    watch that resumed without relisting is a restart, not a gap; a record from a newer kwokbench is refused."""
    from kwokbench.figures.analyse import watch_gaps
    from kwokbench.measure import WATCH_DOC_VERSION, watch_doc
    from kwokbench.report.table import summary_rows
    from kwokbench.store import CLAIMS, KUEUE_WORKLOADS, WATCH, RunDir

    run = RunDir(tmp_path)
    run.write_json(watch_doc(CLAIMS), {"format_version": WATCH_DOC_VERSION, "watch": "ResourceClaim",
                                       "errors": ["1.0 watch: expired (410), relisting"],
                                       "gaps": [{"from": 1.0, "to": 3.5, "seconds": 2.5,
                                                 "vanished": ["ns/a", "ns/b"]}]})
    run.write_json(watch_doc(KUEUE_WORKLOADS), {"format_version": WATCH_DOC_VERSION, "watch": "Kueue Workload",
                                                "errors": ["2.0 watch: HTTP 500; retrying"], "gaps": []})
    run.write_doc(WATCH, {"errors": ["1.0 watch /api/v1/pods: HTTP 500; retrying", "1.5 watch: expired (410), "
                                     "relisting"], "gaps": [{"from": 0.9, "to": 2.0, "seconds": 1.1,
                                                              "vanished": ["ns/p"]}]})
    gaps = watch_gaps(tmp_path)
    assert gaps == {"ResourceClaim": {"restarts": 1, "gaps": 1, "gap_seconds": 2.5, "vanished": 2},
                    "Kueue Workload": {"restarts": 1, "gaps": 0, "gap_seconds": 0, "vanished": 0},
                    "Pod": {"restarts": 2, "gaps": 1, "gap_seconds": 1.1, "vanished": 1}}
    rows = dict(summary_rows({"throughput": {"average": 1.0}, "watch_gaps": gaps})[1])
    assert rows["ResourceClaim watch"] == "1 restart(s), 1 gap(s) of 2.5 s in all, 2 object(s) vanished in them"
    assert rows["Kueue Workload watch"] == "1 restart(s), resumed without a gap"
    assert rows["Pod watch"] == "2 restart(s), 1 gap(s) of 1.1 s in all, 1 object(s) vanished in them"
    run.write_json(watch_doc(CLAIMS), {"format_version": 99, "watch": "ResourceClaim", "errors": [], "gaps": []})
    with pytest.raises(StoreError, match="format version 99 is not supported"):
        watch_gaps(tmp_path)
