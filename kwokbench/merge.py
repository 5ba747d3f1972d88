"""``kwokbench merge``: shards run on several machines joined into one sweep or run group.

A sharded sweep (``sweep --shard i/N``) leaves one sweep directory per shard, each holding the points it
ran; a sharded run group (``run --repeat R --shard i/N``) leaves run directories for its repeats. The
merge copies every cell's run directory under the output folder and writes the documents a single
machine would have written (the sweep's ``sweep.json`` with knees and sentences over all points; for a
run group one group id over all its runs), so ``report`` and ``gate`` read the result as one.

Shards are only joined when they measured the same thing: the same scenario (a digest of the resolved
scenario), the same toolchain versions and the same kwokbench version; a cell found twice is refused.
Hosts may differ, and then the merge says so and records them: compare such points as shares of each
host's own ceiling (the sweep table's "of host ceiling" column), not as absolute rates.

A shard folder may also be what a CI matrix artefact holds: the ``--out`` folder given to the shard's
``sweep`` or ``run``, with the sweep directory (or the runs) below it. The merge finds the one sweep inside
and says so in a note; a folder holding several sweeps or run groups is refused with the folders to pass.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from kwokbench import __version__
from kwokbench.errors import StoreError
from kwokbench.store import META, SWEEP, _atomic_write, digest, find_runs, read_meta, settle_status

GROUP = "group.json"
GROUP_FORMAT_VERSION = 1
"""A merged run group's own document: which shards, hosts and cells it joined."""
SWEEP_SETTINGS = ("scenario", "variant", "nodes", "qps", "slo_p99_seconds", "min_ratio", "duration_seconds")
"""What every shard of one sweep must share (its scenario, grid and SLO)."""


@dataclass
class Merged:
    kind: str
    """``sweep`` or ``runs``."""
    path: Path
    doc: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the merge decided for the user, e.g. which sweep it found inside a folder it was given."""


def merge(dirs: list[Path], out: Path) -> Merged:
    """Join shard folders into ``out`` (which must not exist, or be empty). StoreError (one line) when they
    cannot be one result."""
    if not dirs:
        raise StoreError("merge: give the shard folders to join")
    resolved = {d.resolve() for d in dirs}
    if len(resolved) != len(dirs):
        raise StoreError("merge: a shard folder is given twice")
    if out.resolve() in resolved or any(r in out.resolve().parents for r in resolved):
        raise StoreError(f"merge output {out}: must not be one of the shard folders or inside one")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise StoreError(f"merge output {out}: exists and is not an empty folder")
    notes: list[str] = []
    shards = [_locate(d, notes) for d in dirs]
    if len({s.resolve() for s in shards}) != len(shards):
        raise StoreError("merge: two of the folders hold the same sweep (" + ", ".join(map(str, dirs)) + ")")
    sweeps = [d for d in shards if (d / SWEEP).is_file()]
    if sweeps and len(sweeps) != len(shards):
        plain = next(d for d in shards if d not in sweeps)
        raise StoreError(f"{plain}: not a sweep directory (no {SWEEP}), but {sweeps[0]} is: merge shards of one "
                         "kind")
    merged = _merge_sweeps(shards, out) if sweeps else _merge_runs(shards, out)
    merged.notes[:0] = notes
    return merged


def _locate(folder: Path, notes: list[str]) -> Path:
    """The shard inside ``folder``: the folder itself when it is a sweep directory or holds one run group;
    the one sweep directory below it (what ``sweep --shard i/N --out folder`` leaves, noted in ``notes``).
    A folder holding several sweeps, or runs of several groups, is refused naming what to pass instead."""
    if (folder / SWEEP).is_file() or not folder.is_dir():
        return folder
    sweeps = sorted(s.parent for s in folder.rglob(SWEEP))
    if len(sweeps) == 1:
        notes.append(f"{folder} is not a sweep directory; merging the sweep inside it, {sweeps[0]}")
        return sweeps[0]
    if sweeps:
        raise StoreError(f"{folder} holds {len(sweeps)} sweeps ({', '.join(map(str, sweeps))}): pass the sweep "
                         f"directory of this shard instead of {folder}")
    groups: dict[str, list[Path]] = {}
    for p in find_runs([folder]):
        g = read_meta(p).get("group") or {}
        groups.setdefault(str(g.get("id") or "none"), []).append(p)
    if len(groups) > 1:
        parents = sorted({str(p.parent) for ps in groups.values() for p in ps})
        where = f" in {parents[0]}" if len(parents) == 1 else ""
        raise StoreError(f"{folder} holds runs of {len(groups)} run groups{where} (group ids "
                         f"{', '.join(sorted(groups))}): pass a folder holding only this shard's runs of "
                         "`run --repeat R --shard i/N`")
    return folder


# ---- checks shared by both kinds ------------------------------------------------------------------


def _same(what: str, values: dict[Path, Any]) -> None:
    """Refuse (one line) when the shards disagree on ``what``, naming the two that differ."""
    items = list(values.items())
    first_path, first = items[0]
    for path, v in items[1:]:
        if v != first:
            raise StoreError(f"cannot merge: {path} and {first_path} differ in {what} ({_short(v)} vs "
                             f"{_short(first)})")


def _short(v: Any) -> str:
    text = v if isinstance(v, str) else orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()
    return text if len(text) <= 80 else text[:77] + "..."


def _check_runs(metas: dict[Path, dict[str, Any]]) -> None:
    _same("scenario (resolved scenario digest)", {p: digest(_unscaled(m.get("scenario"))) for p, m in metas.items()})
    _same("toolchain versions", {p: m.get("toolchain") for p, m in metas.items()})
    _same("kwokbench version", {p: m.get("kwokbench_version") for p, m in metas.items()})


def _unscaled(scenario: Any) -> Any:
    """The scenario without what a sweep sets per cell (node counts, the first phase's rate and count), so
    cells of one sweep compare equal and cells of different scenarios do not."""
    if not isinstance(scenario, dict):
        return scenario
    s = dict(scenario)
    cluster = dict(s.get("cluster") or {})
    cluster["node_groups"] = [{k: v for k, v in g.items() if k != "count"} for g in cluster.get("node_groups") or []]
    s["cluster"] = cluster
    workloads = [dict(w) for w in s.get("workloads") or []]
    if workloads:
        for k in ("arrival", "count", "wait_for", "timeout_seconds"):
            workloads[0].pop(k, None)
    s["workloads"] = workloads
    return s


def _host_key(host: Any) -> tuple[str, str, Any]:
    h = host if isinstance(host, dict) else {}
    return (str(h.get("hostname") or "?"), str(h.get("cpu_model") or "?"), h.get("cpus"))


def _hosts_warning(hosts: list[dict[str, Any]]) -> list[str]:
    if len(hosts) < 2:
        return []
    names = ", ".join(f"{h.get('hostname')} ({h.get('cpus')}× {h.get('cpu_model') or '?'})" for h in hosts)
    return [f"the shards ran on {len(hosts)} different hosts: {names}; compare their cells as shares of each "
            "host's own ceiling (`kwokbench ceiling` on each host), not as absolute pods/s"]


def _distinct_hosts(hosts: list[Any]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, str, Any], dict[str, Any]] = {}
    for h in hosts:
        if isinstance(h, dict):
            seen.setdefault(_host_key(h), {k: h.get(k) for k in ("hostname", "cpu_model", "cpus", "memory_bytes")})
    return list(seen.values())


def _copy(run: Path, out: Path) -> Path:
    dest = out / run.name
    if dest.exists():
        raise StoreError(f"cannot merge: two cells are stored under the same name {run.name}")
    try:
        shutil.copytree(run, dest)
    except OSError as e:
        raise StoreError(f"cannot copy {run} into {out}: {e}") from e
    return dest


def _mkdir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create merge output {out}: {e.strerror}") from e


# ---- sweeps ---------------------------------------------------------------------------------------


def _cell_run(shard_dir: Path, run: str) -> Path:
    """A point's run directory: where the sweep recorded it, else beside or inside the shard's sweep folder
    (a CI artefact is unpacked elsewhere than the machine that wrote it)."""
    p = Path(run)
    for candidate in (p, shard_dir.parent / p.name, shard_dir / p.name):
        if (candidate / META).is_file():
            return candidate
    raise StoreError(f"{shard_dir}: the run of one of its points ({p.name}) is missing; copy it beside the sweep "
                     "folder")


def _merge_sweeps(dirs: list[Path], out: Path) -> Merged:
    from kwokbench.sweep import first_failure, knees, load, save, sentence

    docs = {d: load(d) for d in dirs}
    for key in SWEEP_SETTINGS:
        _same(key, {d: doc.get(key) for d, doc in docs.items()})
    _same("scenario (digest)", {d: doc["scenario_digest"] for d, doc in docs.items() if doc.get("scenario_digest")}
          or {dirs[0]: None})
    _same("kwokbench version", {d: doc.get("kwokbench_version", __version__) for d, doc in docs.items()})
    owner: dict[tuple[int, float], Path] = {}
    runs: dict[Path, dict[str, Any]] = {}
    for d, doc in docs.items():
        for p in doc["points"]:
            cell = (int(p["nodes"]), float(p["qps"]))
            if cell in owner:
                raise StoreError(f"cannot merge: the point {cell[0]} nodes × {cell[1]:g}/s is in both {owner[cell]} "
                                 f"and {d} (overlapping shards)")
            owner[cell] = d
            if p.get("run"):
                path = _cell_run(d, p["run"])
                runs[path] = read_meta(path)
    if runs:
        _check_runs(runs)
    first = docs[dirs[0]]
    grid = {(int(n), float(q)) for n in first["nodes"] for q in first["qps"]}
    missing = sorted(grid - set(owner))
    warnings = []
    if missing:
        warnings.append(f"{len(missing)} of {len(grid)} points are in none of the shards (e.g. {missing[0][0]} nodes × "
                        f"{missing[0][1]:g}/s): a shard is missing")
    unfinished = [f"{d} ({doc['status']})" for d, doc in docs.items() if doc.get("status") != "complete"]
    if unfinished:
        warnings.append(f"shards that did not complete: {', '.join(unfinished)}")
    hosts = _distinct_hosts([doc.get("host") for doc in docs.values()] + [m.get("host") for m in runs.values()])
    warnings += _hosts_warning(hosts)

    _mkdir(out)
    points = []
    for d, doc in docs.items():
        for p in doc["points"]:
            p = dict(p)
            if p.get("run"):
                p["run"] = str(_copy(_cell_run(d, p["run"]), out))
            p.setdefault("shard", doc.get("shard"))
            points.append(p)
    points.sort(key=lambda p: (p["nodes"], p["qps"]))
    merged: dict[str, Any] = {
        **{k: first.get(k) for k in ("format_version", "scenario", "scenario_file", "scenario_digest", "variant",
                                     "nodes", "qps", "slo_p99_seconds", "min_ratio", "duration_seconds")},
        "kwokbench_version": first.get("kwokbench_version", __version__),
        "status": "complete" if not missing and not unfinished else "partial",
        "started_at": min(str(doc.get("started_at") or "") for doc in docs.values()),
        "ended_at": max(str(doc.get("ended_at") or "") for doc in docs.values()),
        "merged_at": datetime.now(UTC).isoformat(),
        "shards": [{"shard": doc.get("shard"), "from": str(d), "status": doc.get("status"),
                    "host": (doc.get("host") or {}).get("hostname"),
                    "points": len(doc["points"])} for d, doc in docs.items()],
        "hosts": hosts, "points": points}
    ks = knees(points)
    merged["knees"] = {str(n): v for n, v in ks.items()}
    merged["sentences"] = [sentence(n, ks[n], merged["slo_p99_seconds"], merged["qps"], first_failure(points, n))
                           for n in ks]
    save(out, merged)
    return Merged("sweep", out, merged, warnings)


# ---- run groups -----------------------------------------------------------------------------------


def _merge_runs(dirs: list[Path], out: Path) -> Merged:
    paths = find_runs(dirs)
    metas = {p: settle_status(read_meta(p)) for p in paths}
    for p, m in metas.items():
        if not m.get("group"):  # a sweep's point (its sweep.json left behind) or a run of an older kwokbench
            raise StoreError(f"cannot merge: {p} is not a run of a run group (`run --repeat R --shard i/N`); "
                             "a sweep's shards are merged through their sweep directories")
    _check_runs(metas)
    _same("number of repeats", {p: (m.get("group") or {}).get("of") for p, m in metas.items()})
    owner: dict[tuple[int, str], Path] = {}
    for p, m in metas.items():
        g = m.get("group") or {}
        cell = (int(g.get("repeat", -1)), str((m.get("variant") or {}).get("name")))
        if cell in owner:
            raise StoreError(f"cannot merge: repeat {cell[0] + 1} of variant {cell[1]} is in both {owner[cell]} and "
                             f"{p} (overlapping shards)")
        owner[cell] = p
    total = (next(iter(metas.values())).get("group") or {}).get("of")
    warnings = []
    done = {r for r, _ in owner}
    if isinstance(total, int) and len(done) < total:
        missing = sorted(set(range(total)) - done)
        warnings.append(f"{len(missing)} of {total} repeats are in none of the shards (e.g. repeat {missing[0] + 1}): "
                        "a shard is missing")
    hosts = _distinct_hosts([m.get("host") for m in metas.values()])
    warnings += _hosts_warning(hosts)

    _mkdir(out)
    group_id = "merged-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for p, m in metas.items():
        dest = _copy(p, out)
        g = dict(m.get("group") or {})
        # one group id, as if one machine had run every repeat: the gate pairs runs by (id, repeat)
        g.update(id=group_id, shard_group_id=g.get("id"))
        meta = read_meta(dest)
        meta["group"] = g
        _atomic_write(dest / META, orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    doc: dict[str, Any] = {
        "format_version": GROUP_FORMAT_VERSION, "kwokbench_version": __version__, "id": group_id,
        "scenario": str((next(iter(metas.values())).get("scenario") or {}).get("name")), "repeats": total,
        "merged_at": datetime.now(UTC).isoformat(), "hosts": hosts,
        "shards": sorted({str(m.get("shard")) for m in metas.values()}),
        "cells": [{"repeat": r + 1, "variant": v, "run": p.name, "shard": metas[p].get("shard"),
                   "host": (metas[p].get("host") or {}).get("hostname")} for (r, v), p in sorted(owner.items())]}
    _atomic_write(out / GROUP, orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return Merged("runs", out, doc, warnings)
