"""The import structure: no cycle between kwokbench's modules (imports inside functions count too: one that only
dodges a cycle is still one), no lower layer importing a higher one, and the layers below the scheduler kinds
naming none of them (a kind is one module plus its entry point)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

import kwokbench

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kwokbench"

LAYERS = [names for _, names in kwokbench.LAYERS]
"""Lowest first (the table is :data:`kwokbench.LAYERS`)."""
NO_KIND = ["scenario/__init__.py", "compare/gate.py", "metrics/derive.py", "report/table.py", "runner.py", "plan.py"]
"""Modules that must name no scheduler kind (they learn of kinds from the registry)."""


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """kwokbench modules ``path`` imports, at any depth except under ``if TYPE_CHECKING:`` (types only)."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for b in node.body for n in ast.walk(b)}
    me = _module(path)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("kwokbench")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = me.split(".")[: len(me.split(".")) - node.level + (1 if path.name == "__init__.py" else 0)]
                base = ".".join([*pkg, base] if base else pkg)
            if base.startswith("kwokbench"):
                # `from kwokbench.metrics import writes` imports the submodule when there is one
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    out.add(sub if _exists(sub) else base)
    out.discard(me)
    return out


def _exists(module: str) -> bool:
    p = ROOT / Path(*module.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _graph() -> dict[str, set[str]]:
    return {_module(p): {m for m in _imports(p) if _exists(m)} for p in PACKAGE.rglob("*.py")}


def _layer(module: str) -> int:
    top = module.split(".")[1] if module.count(".") else ""
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{module} is in no layer of tests/unit/test_structure.py: add {top!r} to one")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_no_import_runs_up_a_layer() -> None:
    up = [f"{m} (layer {_layer(m)}) imports {d} (layer {_layer(d)})"
          for m, deps in sorted(_graph().items()) for d in sorted(deps)
          if _layer(d) > _layer(m) and m.split(".")[1:2] != d.split(".")[1:2]]
    assert up == []


def test_the_checks_can_fail() -> None:
    """The cycle finder and the layer table see a cycle and an upward import when there is one."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _layer("kwokbench.cli") > _layer("kwokbench.runner") > _layer("kwokbench.components.yunikorn") \
        > _layer("kwokbench.scenario") > _layer("kwokbench.scheduler_kinds")


def _kinds() -> dict[str, str]:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return doc["project"]["entry-points"]["kwokbench.schedulers"]


def test_every_kind_is_one_module_of_components() -> None:
    """A kind is one module of kwokbench.components, or one package there when it is large enough to split by
    concern (KAI: settings, build, figures, kind): its class defined in it."""
    import importlib

    for name, target in _kinds().items():
        module, _, cls = target.partition(":")
        assert module.startswith("kwokbench.components.") and _exists(module), f"{name}: {target}"
        assert module.count(".") == 2, f"{name}: {module} is not a module or package directly in components"
        kind = getattr(importlib.import_module(module), cls, None)
        assert isinstance(kind, type) and (kind.__module__ == module or kind.__module__.startswith(module + ".")), \
            f"{name}: no class {cls} in {module}"


@pytest.mark.parametrize("rel", NO_KIND)
def test_the_layers_below_the_kinds_name_none(rel: str) -> None:
    text = (PACKAGE / rel).read_text()
    # a kind's own name, as a word (kube-scheduler is also the component every scheduler is measured as)
    # and scheduler-plugins is also the project whose PodGroup CRD every gang workload uses
    named = [k for k in _kinds() if k not in ("kube-scheduler", "plugin", "external", "scheduler-plugins")
             for form in (k, k.replace("-", "_")) if re.search(rf"(?i)\b{re.escape(form)}\b", text)]
    assert named == [], f"{rel} names scheduler kind(s) {named}"
    imported = [t.partition(":")[0] for t in _kinds().values() if t.partition(":")[0] in text]
    assert imported == [], f"{rel} imports scheduler kind module(s) {imported}"


def test_validate_loads_no_analysis_library_and_no_http_client() -> None:
    """``kwokbench validate`` (and the scenario checks of every command) load the scenario, every scheduler kind
    and the manifests without pandas, pyarrow or aiohttp: importing them cost ~1.9 s of its ~2.6 s."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from kwokbench.plan import check_scenario\n"
            "from kwokbench.scenario import load_scenario\n"
            "sc = load_scenario(__import__('pathlib').Path('scenarios/quickstart.yaml'), [])\n"
            "check_scenario(sc, __import__('pathlib').Path('scenarios'))\n"
            "print(sorted(m for m in ('pandas', 'pyarrow', 'aiohttp') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_run_refused_for_its_scenario_loads_no_analysis_library(tmp_path: Path) -> None:
    """``kwokbench run`` on a scenario the loader refuses says so before it imports the run's own modules
    (pandas, pyarrow, aiohttp: about a second of its 2.5)."""
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nname: x\n")
    code = ("import sys\n"
            "from kwokbench.cli import app\n"
            "try:\n"
            f"    app(['run', {str(bad)!r}], prog_name='kwokbench')\n"
            "except SystemExit as e:\n"
            "    print('exit', e.code)\n"
            "print(sorted(m for m in ('pandas', 'pyarrow', 'aiohttp') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.splitlines()[-2:] == ["exit 2", "[]"], out.stdout + out.stderr
    assert "workloads: Field required" in out.stderr, out.stderr


def test_the_verdicts_and_reports_do_not_load_scipy_stats() -> None:
    """The gate, bisect, detect's history and the report compute Student's t with scipy.special: importing
    scipy.stats as well cost each of those commands 0.7 CPU-seconds (`report` on a missing folder 4.5 → 2.1,
    `history` 3.3 → 1.4, measured on 2026-12-01)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "import kwokbench.compare.gate, kwokbench.bisection, kwokbench.report.render, kwokbench.history.index\n"
            "print('scipy.special' in sys.modules, 'scipy.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["True", "False"], out.stdout + out.stderr


def test_a_runs_pod_watcher_loads_neither_the_scenario_loader_nor_the_scheduler_kinds() -> None:
    """The pod watcher is a child process of every run, and the forkserver its children fork from imports it
    (kwokbench.load.child.PRELOAD). It reads quantities from the scenario package, whose names are re-exported
    lazily, so it does not load the loader, every kind's settings or the trace expansion (half of its import's CPU,
    measured on 2026-11-30)."""
    import subprocess
    import sys

    heavy = ("kwokbench.scenario.loading", "kwokbench.scheduler_kinds", "kwokbench.scenario.traces",
             "kwokbench.scenario.models")
    code = f"import sys\nimport kwokbench.load.watcher\nprint(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    # the re-exported names still resolve, each from its module
    import kwokbench.scenario as scenario
    from kwokbench.scenario.loading import load_scenario
    from kwokbench.scenario.models import WorkloadSpec

    assert scenario.load_scenario is load_scenario and scenario.WorkloadSpec is WorkloadSpec
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        scenario.nothing  # noqa: B018


def test_every_module_and_package_is_in_one_layer() -> None:
    """The layer table names every top-level module and package once, and nothing that is gone."""
    have = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    named = [n for names in LAYERS for n in names if n]
    assert sorted(named) == sorted(set(named)), "a name in two layers"
    assert set(named) == have, f"not in a layer: {sorted(have - set(named))}; gone: {sorted(set(named) - have)}"
