"""Kubernetes resource quantities as floats, for the code that sizes objects before and after a run. (A light
module: the cluster and load code use it without loading the analysis libraries.)"""

from __future__ import annotations

from typing import Any

_SUFFIX = {"Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4, "m": 1e-3, "k": 1e3, "M": 1e6,
           "G": 1e9, "T": 1e12}


def quantity(q: Any) -> float:
    """A Kubernetes quantity as a float ("500m" → 0.5, "8" → 8.0, "2Gi" → 2147483648.0)."""
    s = str(q).strip()
    for suf in ("Ki", "Mi", "Gi", "Ti", "m", "k", "M", "G", "T"):
        if s.endswith(suf):
            return float(s[: -len(suf)]) * _SUFFIX[suf]
    return float(s)
