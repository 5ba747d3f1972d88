"""Kueue's view of the run: a watch of its Workloads (one per queued Job) recording when each appeared,
got quota, was admitted and finished (local receive times; the API's condition times have whole-second
resolution and are kept beside them), written as ``kueue_workloads.parquet``."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pandas as pd

from kwokbench.cluster.api import Api
from kwokbench.cluster.kueue import API_VERSION, condition_time
from kwokbench.errors import ClusterError
from kwokbench.measure import Recorder, RunContext
from kwokbench.store import KUEUE_WORKLOADS

STATES = (("QuotaReserved", "reserved"), ("Admitted", "admitted"), ("Finished", "finished"))
COLUMNS = ["namespace", "name", "job", "seen", "reserved", "admitted", "finished", "api_created",
           "api_admitted", "api_finished"]


class KueueWorkloads(Recorder):
    name = "kueue workloads"

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.errors: list[str] = []
        self.run_label = ""
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._synced = threading.Event()

    def handle(self, _typ: str, wl: dict[str, Any], t: float) -> None:
        meta = wl.get("metadata") or {}
        job = next((o.get("name", "") for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"), "")
        if self.run_label and self.run_label not in job:
            return
        key = (meta.get("namespace", ""), meta.get("name", ""))
        row = self.rows.setdefault(key, {"namespace": key[0], "name": key[1], "job": job, "seen": t})
        for cond, col in STATES:
            if row.get(col) is None and condition_time(wl, cond) is not None:
                row[col] = t
        row["api_admitted"] = condition_time(wl, "Admitted")
        row["api_finished"] = condition_time(wl, "Finished")
        created = meta.get("creationTimestamp")
        row["api_created"] = pd.Timestamp(created).timestamp() if created else None

    def start(self, ctx: RunContext) -> None:
        super().start(ctx)
        self.run_label = ctx.run_label
        creds = ctx.cluster.credentials()

        def run() -> None:
            async def main() -> None:
                self._stop = asyncio.Event()
                synced = asyncio.Event()
                async with Api(creds) as api:
                    task = asyncio.create_task(api.watch(
                        f"/apis/{API_VERSION}/workloads", lambda typ, o, t: self.handle(typ, o, t), self._stop,
                        on_error=self.errors.append, synced=synced))
                    await synced.wait()
                    self._synced.set()
                    await task

            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(main())
            except Exception as e:  # recorded, never raised into the run
                self.errors.append(f"{type(e).__name__}: {e}")
                self._synced.set()
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, name="kueue-workloads", daemon=True)
        self._thread.start()
        if not self._synced.wait(60):
            raise ClusterError("the Kueue Workload watch did not start within 60s")

    def stop(self) -> None:
        if self._thread is None or self.run_dir is None:
            return
        time.sleep(1.0)  # the last conditions of the last workloads
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        self.run_dir.write_frame(KUEUE_WORKLOADS, pd.DataFrame(list(self.rows.values()), columns=COLUMNS))
