"""Pure parsing of Prometheus text payloads with ``prometheus_client``'s parser."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

BINDING = {"resource": "pods", "subresource": "binding", "verb": "POST"}
"""Labels of the apiserver's pod-binding POSTs: one per pod the scheduler placed."""


def prefilter(text: str, families: Iterable[str], lines: Mapping[str, Callable[[str], bool]] | None = None) -> str:
    """Keep only the lines of the named families: the parser is slow, payloads are megabytes. ``lines``: for some
    families, which of their sample lines to keep (a test on the raw line, e.g. a label present), so the parser
    never sees the series dropped after it anyway."""
    names = tuple(families)
    prefixes = names + tuple(f"# {kind} {n}" for kind in ("HELP", "TYPE") for n in names)
    hinted = tuple((lines or {}).items())
    out = []
    for line in text.splitlines():
        if not line.startswith(prefixes):
            continue
        if hinted and line[0] != "#" and any(line.startswith(f) and not ok(line) for f, ok in hinted):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def samples(text: str, name: str) -> list[Sample]:
    out: list[Sample] = []
    for fam in text_string_to_metric_families(prefilter(text, [name])):
        out += [s for s in fam.samples if s.name == name]
    return out


def sum_samples(text: str, name: str, labels: Mapping[str, str] | None = None) -> float:
    """Sum of every sample of ``name`` whose labels include ``labels``."""
    want = dict(labels or {})
    return sum(s.value for s in samples(text, name)
               if all(s.labels.get(k) == v for k, v in want.items()))


def increase(values: np.ndarray) -> np.ndarray:
    """Per-interval increases of a counter; a decrease is a reset (process restart), counted from 0."""
    if len(values) < 2:
        return np.zeros(0)
    d = np.diff(values)
    return np.where(d < 0, values[1:], d)
