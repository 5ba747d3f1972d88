"""An independent cross-check through a real Prometheus (kwokctl ``--prometheus-port``).

kwokctl's generated Prometheus scrapes every component every 15 s, so over a short run it sees only
a few samples; its figures are shown next to kwokbench's 1-second ones, never instead of them.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from typing import Any


def selector(apiserver_port: int) -> str:
    """This cluster's binding counter (the instance label pins it to this apiserver)."""
    return (f'apiserver_request_total{{resource="pods",subresource="binding",verb="POST",code="201",'
            f'instance="127.0.0.1:{apiserver_port}"}}')


def _get(port: int, path: str, params: dict[str, str], timeout: float = 10) -> Any:
    url = f"http://127.0.0.1:{port}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=timeout) as r:  # loopback only
        return json.loads(r.read())


def _values(doc: Any) -> list[tuple[float, float]]:
    """Samples of the first series of a range query or a range-vector instant query."""
    res = (doc.get("data") or {}).get("result") or []
    return [(float(t), float(v)) for t, v in res[0]["values"]] if res else []


def query_run(port: int, apiserver_port: int, start: float, end: float, settle: float = 45.0) -> dict[str, Any]:
    """Binding rate and binding count over [start, end], after waiting (up to ``settle`` s, three
    scrape intervals) until Prometheus holds two samples since ``start`` and one past ``end``."""
    sel = selector(apiserver_port)
    rate_query, count_query = f"sum(rate({sel}[1m]))", f"sum({sel})"
    deadline = time.time() + settle
    out: dict[str, Any] = {"query": rate_query, "scrape_interval_seconds": 15}
    try:
        while time.time() < deadline:  # wait until Prometheus has a sample taken after the run
            got = _values(_get(port, "/api/v1/query", {"query": f"{sel}[10m]", "time": str(time.time())}))
            samples = [t for t, _ in got if t >= start - 15]
            if len(samples) >= 2 and samples[-1] >= end:
                break
            time.sleep(1)
        rate = _values(_get(port, "/api/v1/query_range", {"query": rate_query, "start": str(start),
                                                          "end": str(time.time()), "step": "5"}))
        count = _values(_get(port, "/api/v1/query_range", {"query": count_query, "start": str(start - 30),
                                                           "end": str(time.time()), "step": "5"}))
    except (OSError, ValueError, KeyError) as e:
        return {**out, "available": False, "reason": f"Prometheus query failed: {e}"}
    out["series"] = rate
    if not rate:
        return {**out, "available": False, "reason": "Prometheus has fewer than two samples in the run window"}
    vals = [v for _, v in rate]
    out.update(available=True, peak=max(vals), average=sum(vals) / len(vals))
    if len(count) >= 2:
        out["bindings"] = count[-1][1] - count[0][1]
    return out
