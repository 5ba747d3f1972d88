"""The builtin extender's own counts and handling time (``extender.json``); it runs for the whole run."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from kwokbench.measure import Recorder, RunContext
from kwokbench.store import EXTENDER


class ExtenderStats(Recorder):
    name = "extender stats"

    def __init__(self, url: str) -> None:
        self.url = url
        super().__init__()

    def start(self, ctx: RunContext) -> None:
        super().start(ctx)

    def stop(self) -> None:
        if self.run_dir is None:
            return
        stats: dict[str, Any] = {"url": self.url}
        try:
            with urllib.request.urlopen(f"{self.url}/stats", timeout=5) as r:
                stats.update(json.loads(r.read()))
        except (OSError, ValueError) as e:
            stats["error"] = f"could not read the extender's stats: {e}"
        self.run_dir.write_doc(EXTENDER, stats)
