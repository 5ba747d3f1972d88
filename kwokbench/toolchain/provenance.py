"""What a Kubernetes build was made of where it departs from the release's own modules: ``build.json`` beside the
binaries.

Two departures exist, both opted into by the user and both written down so that a bisect over the build can say
what it compared:

- a **substitute**: a staging module the Go module proxy does not serve at the release's own version (this
  machine's proxy refuses ``k8s.io/kube-proxy@v0.37.0-beta.0``), built at another version the user names
  (``tools install --substitute k8s.io/kube-proxy@v0.37.0``); the record lists the packages the binaries import from
  it, so a reader sees what the other version could change;
- **modules the checksum database did not vouch for**: Go checks every download against sum.golang.org unless
  ``GONOSUMDB``/``GONOSUMCHECK``/``GOPRIVATE`` (Go's own settings) exempt it, and refuses a module the database has
  no record of (the pre-releases' tags here). The record names each exempted module of the build with the hash Go
  computed (``go.sum``), so the same build can be checked later.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kwokbench.errors import ToolchainError

RECORD = "build.json"
SUMDB_SKIP = ("GONOSUMDB", "GONOSUMCHECK", "GOPRIVATE")


def parse_substitutes(given: Sequence[str]) -> dict[str, str]:
    """``MODULE@VERSION`` each (``k8s.io/kube-proxy@v0.37.0``) → {module: version}; ScenarioError-like
    ToolchainError naming the bad one."""
    out: dict[str, str] = {}
    for s in given:
        m = re.fullmatch(r"(k8s\.io/[A-Za-z0-9._/-]+)@(v\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)", s.strip())
        if m is None:
            raise ToolchainError(f"--substitute {s!r}: expected a staging module and a version, "
                                 "e.g. k8s.io/kube-proxy@v0.37.0")
        if m[1] in out and out[m[1]] != m[2]:
            raise ToolchainError(f"--substitute names {m[1]} twice ({out[m[1]]} and {m[2]})")
        out[m[1]] = m[2]
    return out


def matches(patterns: str, module: str) -> bool:
    """Whether Go's comma-separated path-prefix glob list (``GONOSUMDB`` syntax: each pattern matches a leading run
    of the module path's elements) covers ``module``."""
    parts = module.split("/")
    for pat in filter(None, (p.strip() for p in patterns.split(","))):
        elems = pat.split("/")
        if len(elems) <= len(parts) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, elems, strict=False)):
            return True
    return False


def unchecked(gosum: str, settings: Mapping[str, str]) -> dict[str, str]:
    """``module@version`` → its ``h1:`` hash, for each module of a build's go.sum that Go's settings exempt from the
    checksum database (``GOSUMDB=off`` exempts all)."""
    off = settings.get("GOSUMDB", "").strip() == "off"
    skip = ",".join(settings.get(n, "") for n in SUMDB_SKIP)
    out: dict[str, str] = {}
    for line in gosum.splitlines():
        f = line.split()
        if len(f) == 3 and not f[1].endswith("/go.mod") and (off or matches(skip, f[0])):
            out[f"{f[0]}@{f[1]}"] = f[2]
    return out


def imported_from(work: Path, env: Mapping[str, str], packages: Sequence[str], modules: Sequence[str]) -> list[str]:
    """The packages of ``modules`` that ``packages`` import (``go list -deps`` in the build's wrapper module)."""
    if not modules:
        return []
    res = subprocess.run(["go", "list", "-deps", *packages], cwd=work, env=dict(env), capture_output=True,
                         text=True, timeout=600, check=False)
    if res.returncode != 0:
        raise ToolchainError("could not list what the build imports: "
                             + (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1])
    return sorted(p for p in res.stdout.split() if any(p == m or p.startswith(m + "/") for m in modules))


def write(out: Path, release: str, substitutes: Mapping[str, str], imported: Sequence[str],
          not_checked: Mapping[str, str]) -> dict[str, Any] | None:
    """Writes ``build.json`` into the build's output folder when the build departs from the release's own modules
    (returns the record), else nothing (None)."""
    if not substitutes and not not_checked:
        return None
    staging = "v0." + release.removeprefix("v1.")
    doc: dict[str, Any] = {
        "release": release,
        "substituted": {m: {"release_has": staging, "built_with": v,
                            "packages_imported": [p for p in imported if p == m or p.startswith(m + "/")]}
                        for m, v in substitutes.items()},
        "not_checked_by_sumdb": dict(not_checked),
    }
    (out / RECORD).write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def read(folder: Path) -> dict[str, Any] | None:
    """The record of the build in ``folder`` (None when it used the release's own modules, all checked)."""
    try:
        got = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return got if isinstance(got, dict) else None


def describe(doc: Mapping[str, Any]) -> str:
    """One line: what the build departs in."""
    parts = [f"{m} {s['built_with']} instead of {s['release_has']} (imported: "
             f"{', '.join(s['packages_imported']) or 'nothing'})" for m, s in doc.get("substituted", {}).items()]
    unchecked_mods = list(doc.get("not_checked_by_sumdb") or {})
    if unchecked_mods:
        more = ", …" if len(unchecked_mods) > 3 else ""
        parts.append(f"{len(unchecked_mods)} module{'s' if len(unchecked_mods) > 1 else ''} not checked by the "
                     f"checksum database ({', '.join(unchecked_mods[:3])}{more})")
    return "; ".join(parts)
