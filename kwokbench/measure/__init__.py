"""Measurements: every source of data a run records implements one small protocol, so the runner starts
and stops a list of them and adding a measurement is one file plus one line (:func:`kwokbench.measure.run.for_run`).

The lifecycle, as kube-burner's measurement factory: ``start`` before the first workload phase,
``stop`` after the last one (or when the run fails: it must be safe to call whatever state the run is
in, and write what was recorded), ``collect`` after every ``stop`` and before the cluster is deleted,
for what only the live cluster can still tell (its nodes, events, a Prometheus). Measurements write
raw files into the run directory; figures are derived afterwards by :func:`kwokbench.figures.analyse.analyse`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from kwokbench.cluster.api import WatchGaps
from kwokbench.errors import ClusterError
from kwokbench.store import RunDir

if TYPE_CHECKING:
    from kwokbench.cluster.attach import AttachedCluster
    from kwokbench.cluster.kwokctl import ClusterInfo, Kwokctl
    from kwokbench.progress import Reporter
    from kwokbench.scenario import Scenario


@dataclass
class RunContext:
    """What a measurement may use: the run's directory and scenario, its cluster and how it was made."""

    run_dir: Path
    scenario: Scenario
    run_label: str
    cluster: ClusterInfo | AttachedCluster
    kwokctl: Kwokctl
    reporter: Reporter
    attached: AttachedCluster | None = None
    created_cluster: bool = False
    """kwokbench made this cluster for the run (not ``--cluster``, not attached)."""
    scrape_interval: float = 1.0
    prometheus_port: int | None = None
    profile: list[str] = field(default_factory=list)
    """Components whose CPU profile is taken over the first phase (``run --profile``)."""
    schedulers: list[dict[str, Any]] = field(default_factory=list)
    """Schedulers kwokbench started itself (external or concurrent): component, metrics_url, … each."""
    components: list[Any] = field(default_factory=list)
    """The run's components (:mod:`kwokbench.components`): their endpoints and measurements."""
    extras: dict[str, Any] = field(default_factory=dict)
    first_created: threading.Event = field(default_factory=threading.Event)
    """Set by the runner when the first phase's first object was created: what a measurement of the phase
    alone (a CPU profile) waits for, however long the run took to begin submitting."""


class Measurement(Protocol):
    name: str

    def start(self, ctx: RunContext) -> None:
        """Begin recording; raise :class:`~kwokbench.errors.KwokbenchError` if it cannot."""

    def stop(self) -> None:
        """Stop recording and write the raw files (safe after a failed or partial ``start``)."""

    def collect(self, ctx: RunContext) -> None:
        """After every measurement stopped, before the cluster goes: read what only the cluster can tell."""


class Recorder:
    """A measurement's defaults: it keeps the run directory at ``start`` and does nothing else; a
    measurement overrides the hooks it needs."""

    name = "measurement"

    def __init__(self) -> None:
        self.run_dir: RunDir | None = None

    def start(self, ctx: RunContext) -> None:
        self.run_dir = RunDir(ctx.run_dir)

    def stop(self) -> None:
        pass

    def collect(self, ctx: RunContext) -> None:
        pass


WATCH_DOC_VERSION = 1
"""``<stem>_watch.json`` history: 1, the first (errors, gaps)."""


def watch_doc(file: str) -> str:
    """The document of an :class:`ObjectWatch`'s errors and gaps, beside its table ``file``."""
    return f"{file.rsplit('.', 1)[0]}_watch.json"


class ObjectWatch(Recorder):
    """A watch of one collection over the run, on its own thread and event loop: ``handle`` keeps a row per
    object (local receive times), written as ``file`` at ``stop``. Errors are recorded, never raised into
    the run.

    Gaps are data: a watch whose resourceVersion expired (410) relists, and what was deleted meanwhile is not in
    the new list. Each such gap is written beside ``file`` (``<stem>_watch.json``: from, to, the objects that
    vanished in it) with the watch's errors, and each vanished object is handed to :meth:`vanished` with the
    gap's bounds, so a record never holds an object for ever that went while no one was looking."""

    name = "object watch"
    path = ""
    file = ""
    columns: ClassVar[list[str]] = []
    settle = 1.0
    """Seconds ``stop`` waits for the last objects' last changes."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str, ...], dict[str, Any]] = {}
        self.errors: list[str] = []
        self._gaps = WatchGaps()
        self.run_label = ""
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._synced = threading.Event()

    def handle(self, typ: str, obj: dict[str, Any], t: float) -> None:
        """One object of this run (:meth:`mine`) as the watch delivers it, through :meth:`event`."""
        raise NotImplementedError

    def mine(self, obj: dict[str, Any]) -> bool:
        """Whether ``obj`` belongs to this run's record (the live set and the gaps count only those)."""
        return True

    def vanished(self, key: tuple[str, str], gap_from: float, gap_to: float) -> None:
        """Object ``key`` was deleted somewhere in a gap of the watch (between the two times): close its row."""

    def event(self, typ: str, obj: dict[str, Any], t: float) -> None:
        """What the watch delivers: the live set kept, the object handed to :meth:`handle`."""
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        if not self.mine(obj):
            return
        self._gaps.seen(typ, key)
        self.handle(typ, obj, t)

    def error(self, msg: str) -> None:
        """A restart of the watch (recorded)."""
        self.errors.append(f"{time.time():.3f} {msg}")

    @property
    def gaps(self) -> list[dict[str, Any]]:
        return self._gaps.gaps

    def gone(self, since: float) -> None:
        """The watch's resourceVersion expired (410): it relists, and a gap opens at ``since``, when it was last
        known to have missed nothing."""
        self._gaps.gone(since)

    def listed(self, taken: float) -> None:
        """A list (its snapshot taken at ``taken``) delivered its last object: after a relist, what it did not list
        again vanished in the gap."""
        if closed := self._gaps.listed(taken):
            start, end, gone = closed
            for key in gone:
                self.vanished(key, start, end)

    def start(self, ctx: RunContext) -> None:
        from kwokbench.cluster.api import Api  # the package is imported by `validate`, which needs no HTTP client

        super().start(ctx)
        self.run_label = ctx.run_label
        creds = ctx.cluster.credentials()

        def run() -> None:
            async def main() -> None:
                self._stop = asyncio.Event()
                synced = asyncio.Event()
                async with Api(creds) as api:
                    task = asyncio.create_task(api.watch(self.path, self.event, self._stop, on_error=self.error,
                                                         synced=synced, on_listed=self.listed, on_gone=self.gone))
                    await synced.wait()
                    self._synced.set()
                    await task

            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(main())
            except Exception as e:  # recorded, never raised into the run
                self.errors.append(f"{time.time():.3f} {type(e).__name__}: {e}")
                self._synced.set()
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        if not self._synced.wait(60):
            raise ClusterError(f"the {self.name} watch did not start within 60s")

    def stop(self) -> None:
        import pandas as pd

        if self._thread is None or self.run_dir is None:
            return
        time.sleep(self.settle)
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        self.run_dir.write_frame(self.file, pd.DataFrame(list(self.rows.values()), columns=self.columns))
        self.run_dir.write_json(watch_doc(self.file), {"format_version": WATCH_DOC_VERSION, "watch": self.name,
                                                       "errors": self.errors, "gaps": self.gaps})
