"""The manual's measured figures, each stored once with where it came from, and quoted from there.

A figure that several pages quote (a ceiling, a scenario's run) lives in ``docs/results/data/<family>.yaml``: what it
is, its unit, and each run that measured it — its value, date, the command and the commit that produced it. A page
that opts in (front matter ``render_macros: true``; mkdocs-macros-plugin, mkdocs.yml) quotes it as
``{{ fig("ceilings.dra_100nodes@2026-11-27") }}`` (one run, by its date) or ``{{ fig("ceilings.dra_100nodes") }}``
(all its runs: the median, with the range and count when there are several) and divides two as
``{{ ratio("dra.partitions_phase1", "ceilings.dra_100nodes@2026-11-27") }}``. A name no data holds fails the build
(``on_undefined: strict``), and tests/unit/test_docs.py fails a page that types a stored figure by hand.

A benchmark's table is stored whole: ``docs/results/data/<name>.json`` holds every run's row as the benchmark wrote it
(``--data``), with the command, commit, day and host, and ``{{ bench_table("<name>") }}`` renders it with that
benchmark's own ``markdown()`` (so the page and the script print the same figures); ``bench_cell`` quotes one median
of it, ``bench_change`` the change between two rows' medians and ``bench_gate`` the gate's decision between two
variants over their paired runs.

Kept beside the pages, not in kwokbench: it is the manual's, and tests render pages with it (``render``).
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import jinja2
import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "results" / "data"
# what every run of a stored figure says of itself: a figure nobody can trace back is not stored
RUN_FIELDS = ("value", "date", "command", "commit")


class FigureError(ValueError):
    """A figure a page names that the data does not hold, or data without its origin."""


class Figure(NamedTuple):  # not a dataclass: mkdocs-macros loads this file outside sys.modules
    key: str
    what: str
    unit: str
    digits: int
    runs: tuple[dict[str, Any], ...]
    check_copies: bool = True
    """False where the value's text also stands for other quantities on the pages (a GPU allocation of 95.4% is also
    the simulator's): a copy of it cannot be told from those by its text, so the by-hand check leaves it out."""

    def text(self, v: float, unit: bool = True) -> str:
        s = f"{v:,.{self.digits}f}" if abs(v) >= 10_000 else f"{v:.{self.digits}f}"
        s = s.replace("-", "\u2212")  # the manual's minus sign, as its hand-set figures print it
        if not unit or not self.unit:
            return s
        return f"{s}{self.unit}" if self.unit in ("%", "x") else f"{s} {self.unit}"


@cache
def figures() -> dict[str, Figure]:
    """Every stored figure by ``family.name`` (the file's stem, the entry)."""
    out = {}
    for path in sorted(DATA.glob("*.yaml")):
        for name, entry in (yaml.safe_load(path.read_text()) or {}).items():
            key = f"{path.stem}.{name}"
            runs = tuple(entry.get("runs") or ())
            missing = [f"run {i + 1}: {f}" for i, r in enumerate(runs) for f in RUN_FIELDS if r.get(f) in (None, "")]
            if not runs or missing or not entry.get("what"):
                raise FigureError(f"{path.name}: {name}: a figure needs `what` and runs with "
                                  f"{', '.join(RUN_FIELDS)}; missing {', '.join(missing) or 'runs or what'}")
            out[key] = Figure(key, entry["what"], entry.get("unit", ""), int(entry.get("digits", 1)), runs,
                              bool(entry.get("check_copies", True)))
    return out


def lookup(ref: str) -> tuple[Figure, tuple[dict[str, Any], ...]]:
    """A figure and the runs ``ref`` names: ``family.name`` (all), ``family.name@id`` (the run of that ``id``),
    ``family.name@date`` (that day's) or several of those comma-separated (``family.name@id1,id2``)."""
    key, _, date = ref.partition("@")
    fig = figures().get(key)
    if fig is None:
        raise FigureError(f"no stored figure {key!r} (docs/results/data/{key.partition('.')[0]}.yaml)")
    named = set(date.split(","))
    runs = tuple(r for r in fig.runs if named & {str(r["date"]), str(r.get("id"))}) if date else fig.runs
    if not runs:
        raise FigureError(f"{key} has no run {date} (runs: {', '.join(str(r.get('id', r['date'])) for r in fig.runs)})")
    return fig, runs


def _median(runs: tuple[dict[str, Any], ...]) -> float:
    return float(statistics.median(float(r["value"]) for r in runs))


def fig(ref: str, unit: bool = True, spread: bool = True) -> str:
    """The figure as a page quotes it: one run's value, or the median of several with their range and count."""
    f, runs = lookup(ref)
    text = f.text(_median(runs), unit)
    if len(runs) > 1 and spread:
        lo, hi = min(float(r["value"]) for r in runs), max(float(r["value"]) for r in runs)
        text += f" (median of {len(runs)} runs, {f.text(lo, False)}–{f.text(hi, False)})"
    return text


def runs(ref: str) -> str:
    """Every run ``ref`` names, each with its day: ``55.4 (2026-11-26), 86.0 pods/s (2026-11-27)``."""
    f, named = lookup(ref)
    last = len(named) - 1
    return ", ".join(f"{f.text(float(r['value']), unit=i == last)} ({r['date']})" for i, r in enumerate(named))


def value(ref: str) -> float:
    """The number itself (the median over the runs named), for a page's own arithmetic."""
    return _median(lookup(ref)[1])


def ratio(num: str, den: str, digits: int = 2) -> str:
    """``num / den`` as ``0.12x``: each side's median over the runs it names."""
    return f"{value(num) / value(den):.{digits}f}x"


def spread(*refs: str) -> str:
    """The spread of the runs ``refs`` name, as kwokbench states a ceiling's ((max − min) / median): ``4.2%``."""
    xs = [float(r["value"]) for ref in refs for r in lookup(ref)[1]]
    return f"{100 * (max(xs) - min(xs)) / statistics.median(xs):.1f}%"


def over(x: float, den: str, digits: int = 2) -> str:
    """A page's own figure ``x`` (a value in its table) divided by a stored one, as ``0.27``."""
    return f"{x / value(den):.{digits}f}"


def source(ref: str) -> str:
    """Where a figure came from, for a page to cite: each run's date, command and commit."""
    _, runs = lookup(ref)
    return "; ".join(f"{r['date']}: `{r['command']}` at {str(r['commit'])[:10]}" for r in runs)


TABLE_FIELDS = ("what", "command", "commit", "date", "host", "runs")


@cache
def bench_data(name: str) -> dict[str, Any]:
    """A benchmark's stored runs (``docs/results/data/<name>.json``), refused without their origin."""
    path = DATA / f"{name}.json"
    if not path.is_file():
        raise FigureError(f"no stored benchmark data {name!r} (docs/results/data/{path.name})")
    doc = json.loads(path.read_text())
    missing = [f for f in TABLE_FIELDS if not doc.get(f)]
    if missing:
        raise FigureError(f"{path.name}: benchmark data needs {', '.join(TABLE_FIELDS)}; missing {', '.join(missing)}")
    return dict(doc)


def benchmarks() -> list[str]:
    """The names of every stored benchmark table."""
    return sorted(p.stem for p in DATA.glob("*.json"))


def _benchmark(name: str) -> Any:
    """The module of the benchmark whose command made ``name`` (its ``markdown`` and ``median_row``), or the one its
    ``rendered_by`` names (data a kwokbench command made, kept by a benchmark: a bisect)."""
    d = bench_data(name)
    return _module(str(d.get("rendered_by") or str(d["command"]).split()[1]))


@cache
def _module(script: str) -> Any:
    """A benchmark script (``benchmarks/bench_x.py``) loaded once, by its path in the repository."""
    folder = str((ROOT / script).parent)
    if folder not in sys.path:  # as when the script runs: it may import its sibling benchmarks
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(Path(script).stem, ROOT / script)
    if spec is None or spec.loader is None:
        raise FigureError(f"cannot load the benchmark {script}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_table(name: str, ceiling: str | None = None) -> str:
    """The benchmark's table of its stored runs; *× ceiling* against a stored ceiling (its runs' median)."""
    module = _benchmark(name)
    if ceiling:
        return str(module.markdown(bench_data(name), value(ceiling)))
    return str(module.markdown(bench_data(name)))


def _median_of(name: str, variant: str, key: str) -> float:
    runs = bench_data(name)["runs"].get(variant)
    if not runs:
        raise FigureError(f"{name} has no variant {variant!r} (it has {', '.join(bench_data(name)['runs'])})")
    row = _benchmark(name).median_row(runs)
    if row.get(key) is None:
        raise FigureError(f"{name}: {variant} has no figure {key!r}")
    return float(row[key])


def bench_cell(name: str, variant: str, key: str, digits: int = 1) -> str:
    """One median of a stored benchmark table (``key`` as the benchmark's rows name it)."""
    return f"{_median_of(name, variant, key):.{digits}f}"


def bench_change(name: str, base: str, other: str, key: str) -> str:
    """``other``'s median against ``base``'s, as ``+13%``/``−3%`` (or ``2.2x`` from twice up)."""
    r = _median_of(name, other, key) / _median_of(name, base, key)
    return f"{r:.1f}x" if r >= 2 else f"{100 * (r - 1):+.0f}%".replace("-", "\u2212")


def bench_gate(name: str, base: str, other: str, key: str, higher_is_better: bool = True, allowed: float = 0.10) -> str:
    """``other`` against ``base`` by the gate's paired test over their stored runs (the i-th run of each the i-th
    repeat): ``+36.2% (90% CI +20.1..+54.3%, 3 pairs: better)``, the gate's decision (better, same, worse or
    inconclusive at ``allowed``)."""
    from kwokbench.compare.stats import compare

    runs = bench_data(name)["runs"]
    for v in (base, other):
        if v not in runs:
            raise FigureError(f"{name} has no variant {v!r} (it has {', '.join(runs)})")
    a, b = ([r[key] for r in runs[v]] for v in (base, other))
    c = compare(key, a, b, higher_is_better, max_regression=allowed, paired=True)
    if c.ratio is None or c.ci is None:
        return f"undecided ({c.reason})"
    pct = [f"{100 * (x - 1):+.1f}" for x in (c.ratio, *c.ci)]
    decision = {"regression": "worse"}.get(c.decision, c.decision)  # rivals compared, not a change to gate
    text = f"{pct[0]}% ({100 * c.level:.0f}% CI {pct[1]}..{pct[2]}%, {c.pairs} pairs: {decision})"
    return text.replace("-", "\u2212")


def bench_source(name: str) -> str:
    """Where a benchmark's stored data came from: ``2026-11-29 at 1d207d4f80 on vm, 2 CPUs``."""
    d = bench_data(name)
    return f"{d['date']} at {str(d['commit'])[:10]}{' (uncommitted changes)' if d.get('dirty') else ''} on {d['host']}"


def bench(name: str, function: str, *args: Any) -> str:
    """What a benchmark's own ``function`` renders from its stored data (``bench_verdicts.spread_table(doc, "duet")``
    as ``bench("verdicts-…", "spread_table", "duet")``): a table or a figure the script computes, not the page."""
    fn = getattr(_benchmark(name), function, None)
    if not callable(fn):
        raise FigureError(f"{name}: its benchmark has no function {function!r}")
    try:
        return str(fn(bench_data(name), *args))
    except (KeyError, IndexError, TypeError) as e:
        raise FigureError(f"{name}: {function}{args} reads what the data does not hold "
                          f"({type(e).__name__}: {e})") from e


def code(ref: str, *args: Any, per: float = 1) -> str:
    """A setting the code holds, not a measured figure, quoted from the code so that a page cannot drift from it:
    ``code("kwokbench.compare.stats.ALPHA")`` is ``0.05``; a function is called with ``args``
    (``code("kwokbench.compare.stats.looks", 3, 12)`` is ``3, 4, 7, 10, 12``); ``per`` divides a number
    (``per=2**20``: bytes as MiB)."""
    import importlib

    module, _, name = ref.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as e:
        raise FigureError(f"{ref}: no such setting in the code ({e})") from e
    obj = obj(*args) if callable(obj) else obj
    if isinstance(obj, (list, tuple)):
        return ", ".join(f"{x:g}" if isinstance(x, (int, float)) else str(x) for x in obj)
    return f"{obj / per:g}" if isinstance(obj, (int, float)) else str(obj)


def scenario(path: str, key: str) -> str:
    """A value a shipped scenario file sets (``scenario("scenarios/x.yaml", "workloads.0.trace.inflate")``): an
    input, quoted from the file a user runs."""
    try:
        doc: Any = yaml.safe_load((ROOT / path).read_text())
        for part in key.split("."):
            doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    except (OSError, KeyError, IndexError, ValueError, TypeError) as e:
        raise FigureError(f"{path}: no {key} ({type(e).__name__}: {e})") from e
    return f"{doc:g}" if isinstance(doc, float) else str(doc)


MACROS = {"fig": fig, "runs": runs, "value": value, "ratio": ratio, "over": over, "spread": spread, "source": source,
          "bench_table": bench_table, "bench_cell": bench_cell, "bench_change": bench_change,
          "bench_gate": bench_gate, "bench": bench,
          "bench_source": bench_source, "code": code, "scenario": scenario}


def render(text: str) -> str:
    """A page's Markdown with its figures filled in, as the docs build renders it (tests read pages this way)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
    return env.from_string(text).render(**MACROS)


def define_env(env: Any) -> None:
    """mkdocs-macros-plugin's entry point (``module_name: docs/figures`` in mkdocs.yml)."""
    for name, fn in MACROS.items():
        env.macro(fn, name)
