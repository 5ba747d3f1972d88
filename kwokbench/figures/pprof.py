"""A pprof CPU profile's top functions, read in pure Python (no ``go tool pprof`` at analysis time).

A profile is a gzipped protobuf ``perftools.profiles.Profile`` (github.com/google/pprof, proto/profile.proto).
Only what a top table needs is decoded: ``sample_type`` (1), ``sample`` (2: ``location_id`` 1, ``value`` 2),
``location`` (4: ``id`` 1, ``line`` 4 → ``function_id`` 1), ``function`` (5: ``id`` 1, ``name`` 2),
``string_table`` (6), ``duration_nanos`` (10). No well-kept PyPI package decodes the format without
generated code, and the wire format is small: varints and length-delimited fields.

*Flat* is the value of samples whose innermost frame is the function; *cumulative* of samples with the
function anywhere on the stack (counted once per sample), as ``go tool pprof -top``.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kwokbench.errors import StoreError
from kwokbench.store import PROFILE_FORMAT_VERSION as FORMAT_VERSION
from kwokbench.store import PROFILE_INDEX as INDEX
from kwokbench.store import PROFILES

TOP = 10


def _varint(b: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(b):
            raise ValueError("truncated varint")
        byte = b[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def fields(b: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message: an int for varints and fixed widths, bytes for
    length-delimited fields."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
            yield num, wire, v
        elif wire == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise ValueError("truncated field")
            yield num, wire, b[i:i + n]
            i += n
        elif wire == 1:
            yield num, wire, int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wire == 5:
            yield num, wire, int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _ints(wire: int, v: Any) -> list[int]:
    """A repeated integer field: packed (one length-delimited run of varints) or one value per field."""
    if wire != 2:
        return [int(v)]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v  # int64 on the wire is two's complement


@dataclass
class Profile:
    sample_types: list[tuple[str, str]] = field(default_factory=list)
    """(type, unit) of each sample value, e.g. ("samples", "count"), ("cpu", "nanoseconds")."""
    samples: list[tuple[list[int], list[int]]] = field(default_factory=list)
    """(location ids, innermost first; values)."""
    locations: dict[int, list[int]] = field(default_factory=dict)
    """location id → function ids, innermost (inlined) first."""
    functions: dict[int, str] = field(default_factory=dict)
    duration_seconds: float | None = None


def decode(data: bytes) -> Profile:
    """A profile from its file's bytes (gzipped or not); ValueError when it is not a profile."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise ValueError(f"not a gzip stream: {e}") from e
    strings: list[str] = []
    types: list[tuple[int, int]] = []
    samples: list[tuple[list[int], list[int]]] = []
    locations: dict[int, list[int]] = {}
    functions: dict[int, int] = {}
    duration = None
    for num, wire, v in fields(data):
        if num == 6 and wire == 2:
            strings.append(v.decode("utf-8", errors="replace"))
        elif num == 1 and wire == 2:
            vt = {n: x for n, _, x in fields(v)}
            types.append((vt.get(1, 0), vt.get(2, 0)))
        elif num == 2 and wire == 2:
            locs: list[int] = []
            values: list[int] = []
            for n, w, x in fields(v):
                if n == 1:
                    locs += _ints(w, x)
                elif n == 2:
                    values += [_signed(y) for y in _ints(w, x)]
            samples.append((locs, values))
        elif num == 4 and wire == 2:
            loc_id, funcs = 0, []
            for n, w, x in fields(v):
                if n == 1:
                    loc_id = x
                elif n == 4 and w == 2:
                    funcs.append(next((y for m, _, y in fields(x) if m == 1), 0))
            locations[loc_id] = funcs
        elif num == 5 and wire == 2:
            fn = {n: x for n, _, x in fields(v) if n in (1, 2)}
            functions[fn.get(1, 0)] = fn.get(2, 0)
        elif num == 10 and wire == 0:
            duration = _signed(v) / 1e9

    def s(i: int) -> str:
        return strings[i] if 0 <= i < len(strings) else f"?{i}"

    if not strings or not types:
        raise ValueError("no string table or sample types: not a pprof profile")
    return Profile([(s(t), s(u)) for t, u in types], samples, locations, {k: s(v) for k, v in functions.items()},
                   duration)


def top(profile: Profile, n: int = 10) -> dict[str, Any]:
    """The ``n`` functions with the most flat value (CPU time when the profile has it) and the ``n`` with the
    most cumulative value, each row with both."""
    idx = next((i for i, (t, _) in enumerate(profile.sample_types) if t == "cpu"), len(profile.sample_types) - 1)
    kind, unit = profile.sample_types[idx]
    flat: dict[str, int] = {}
    cum: dict[str, int] = {}
    total = 0
    for locs, values in profile.samples:
        v = values[idx] if idx < len(values) else 0
        total += v
        stack = [profile.functions.get(f, "?") for loc in locs for f in profile.locations.get(loc, [])]
        if stack:
            flat[stack[0]] = flat.get(stack[0], 0) + v
        for name in set(stack):
            cum[name] = cum.get(name, 0) + v
    scale = 1e-9 if unit == "nanoseconds" else 1.0

    def row(f: str) -> dict[str, Any]:
        return {"function": f, "flat": flat.get(f, 0) * scale, "flat_share": flat.get(f, 0) / total if total else 0.0,
                "cum": cum[f] * scale, "cum_share": cum[f] / total if total else 0.0}

    return {"value": kind, "unit": "seconds" if scale != 1.0 else unit, "total": total * scale,
            "samples": len(profile.samples), "duration_seconds": profile.duration_seconds,
            "top": [row(f) for f in sorted(flat, key=lambda f: (-flat[f], f))[:n]],
            "top_cum": [row(f) for f in sorted(cum, key=lambda f: (-cum[f], f))[:n]]}


def top_of_file(data: bytes, n: int = 10) -> dict[str, Any]:
    try:
        return top(decode(data), n)
    except (ValueError, IndexError) as e:
        raise StoreError(f"not a readable pprof profile: {e}") from e


def profiles_section(run_dir: Path) -> dict[str, Any] | None:
    """The summary's ``profiles``: per profiled component, its file (relative to the run) and top functions,
    or why there is none (None: the run asked for no profile)."""
    from kwokbench.store import read_versioned

    if not (run_dir / PROFILES / INDEX).exists():
        return None
    index = read_versioned(run_dir / PROFILES, INDEX, FORMAT_VERSION, "profile index")
    out: dict[str, Any] = {}
    for comp, entry in (index.get("profiles") or {}).items():
        f = run_dir / str(entry.get("file", ""))
        if entry.get("error") or not entry.get("file") or not f.is_file():
            out[comp] = {"error": entry.get("error") or f"{f} is missing"}
            continue
        try:
            out[comp] = {"file": entry["file"], "seconds": index.get("seconds"), "began": entry.get("began"),
                         **top_of_file(f.read_bytes(), TOP)}
        except StoreError as e:
            out[comp] = {"file": entry["file"], "error": str(e)}
    return out
