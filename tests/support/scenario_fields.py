"""Which documented scenario fields the shipped scenarios and the tests use.

A field is named by the model that declares it (``ClusterSpec.extra_args``; a field every scheduler kind inherits is
its base's, ``SchedulerSpec.client_qps``). It counts as used when it is set in
- a shipped scenario (``scenarios/**/*.yaml``) or a scenario file under ``tests/``,
- a scenario text in a test (a string constant that validates as a scenario),
- a ``schedulers:`` or ``workloads:`` list in a test (a string constant such as ``[{name: v, binary: volcano, …}]``
  that a test helper puts under a stub scenario, and that validates there): the fields set under that list,
- a test's run of a shipped scenario with ``--set`` overrides (the scenario validated with them),
- a ``--set``-style override string in a test (``workloads.0.claims.0.shared_by=2``: its path resolved through the
  models), or
- a test's direct construction of a model (``RampArrival(start_qps=10, …)``: the keywords).
Read statically, so nothing runs: what a test builds at run time from pieces (f-strings, loops) is not seen.
"""

from __future__ import annotations

import ast
import inspect
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kwokbench import scheduler_kinds
from kwokbench.errors import ScenarioError
from kwokbench.scenario import parse_scenario, scenario_model

REPO = Path(__file__).resolve().parents[2]
CHECK = "tests/unit/test_scenario_fields.py"
"""The check itself: its examples of what counts set nothing."""


def models() -> dict[str, type[BaseModel]]:
    """Every model a scenario is made of (each scheduler kind's settings too), by class name."""
    roots = [scenario_model(), *(k.settings for k in scheduler_kinds.registry().values())]
    seen: dict[str, type[BaseModel]] = {}
    todo = list(roots)
    while todo:
        c = todo.pop()
        if c.__name__ in seen:
            continue
        seen[c.__name__] = c
        for f in c.model_fields.values():
            todo.extend(_models_in(f.annotation))
    return seen


def _models_in(t: Any) -> list[type[BaseModel]]:
    out, stack = [], [t]
    while stack:
        x = stack.pop()
        if isinstance(x, type) and issubclass(x, BaseModel):
            out.append(x)
        stack.extend(typing.get_args(x))
    return out


def owner(c: type[BaseModel], field: str) -> str:
    """``Class.field`` of the class that declares ``field`` (the base-most one in ``c``'s ancestry)."""
    for b in reversed(c.__mro__):
        if isinstance(b, type) and issubclass(b, BaseModel) and field in inspect.get_annotations(b):
            return f"{b.__name__}.{field}"
    return f"{c.__name__}.{field}"


def documented() -> set[str]:
    """Every field of every scenario model, by its declaring model."""
    return {owner(c, f) for c in models().values() for f in c.model_fields}


def _set_in(obj: Any, out: set[str]) -> None:
    if isinstance(obj, BaseModel):
        for f in obj.model_fields_set:
            out.add(owner(type(obj), f))
            _set_in(getattr(obj, f), out)
    elif isinstance(obj, list | tuple):
        for x in obj:
            _set_in(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _set_in(x, out)


def override_fields(path: str) -> set[str]:
    """The fields a ``--set`` path names, resolved through the models from the scenario down (every kind a
    ``schedulers.N`` entry may be); empty when it names none."""
    current: list[type[BaseModel]] = [scenario_model()]
    out: set[str] = set()
    for key in path.split("."):
        if key.isdigit():
            continue
        nxt: list[type[BaseModel]] = []
        for c in current:
            if key in c.model_fields:
                out.add(owner(c, key))
                nxt.extend(_models_in(c.model_fields[key].annotation))
        if not nxt and key != path.split(".")[-1]:
            return out
        current = nxt
    return out


def _scenario_texts() -> Iterator[tuple[str, str, list[str]]]:
    for root in (REPO / "scenarios", REPO / "tests"):
        for p in sorted(root.rglob("*.yaml")):
            yield str(p.relative_to(REPO)), p.read_text(), []


STUB = "schema_version: 1\nname: s\ncluster: {node_groups: [{name: c, count: 3}]}\n"
"""The scenario a ``schedulers:``/``workloads:`` list is read in (what the tests' ``_scenario`` helpers put
around one)."""


def listed_fields(text: str) -> set[str]:
    """The fields a ``schedulers:`` or ``workloads:`` list sets, when ``text`` is one that validates under
    :data:`STUB` (the stub's own fields not counted); empty otherwise."""
    if not text.lstrip().startswith("[") or "name:" not in text:
        return set()
    for key, rest in (("schedulers", "\nworkloads: [{name: p, count: 1}]\n"), ("workloads", "\n")):
        try:
            sc = parse_scenario(f"{STUB}{key}: {text}{rest}")
        except ScenarioError:
            continue
        fields = {f"Scenario.{key}"}
        _set_in(getattr(sc, key), fields)
        return fields
    return set()


def _constants(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def used() -> dict[str, list[str]]:
    """Field → the places that set it."""
    found: dict[str, list[str]] = {}

    def add(fields: set[str], where: str) -> None:
        for f in fields:
            found.setdefault(f, []).append(where)

    def scenario(text: str, where: str, sets: list[str]) -> None:
        try:
            sc = parse_scenario(text, where, sets)
        except ScenarioError:
            return  # a test of bad input, or a fragment
        fields: set[str] = set()
        _set_in(sc, fields)
        add(fields, where)

    for where, text, sets in _scenario_texts():
        scenario(text, where, sets)
    names = models()
    for p in sorted((REPO / "tests").rglob("*.py")):
        rel = str(p.relative_to(REPO))
        if rel == CHECK:
            continue
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if "workloads" in node.value and "\n" in node.value:
                    scenario(node.value, where, [])
                add(listed_fields(node.value), where)
                path, eq, _ = node.value.partition("=")
                if eq and "." in path and " " not in path:
                    add(override_fields(path), where)
            elif isinstance(node, ast.Call):
                consts = _constants(node)
                files = [c for c in consts if c.endswith(".yaml") and (REPO / c).is_file()]
                sets = [consts[i + 1] for i, c in enumerate(consts[:-1]) if c == "--set"]
                if files and sets:
                    scenario((REPO / files[0]).read_text(), where, sets)
                fn = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if fn in names:
                    add({owner(names[fn], k.arg) for k in node.keywords
                         if k.arg and k.arg in names[fn].model_fields}, where)
    return found
