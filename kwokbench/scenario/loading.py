"""Loading a scenario file: YAML with line numbers for every error, ``--set`` overrides, then the trace
workloads expanded (:mod:`kwokbench.scenario.traces`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    ValidationError,
)

from kwokbench import scheduler_kinds
from kwokbench.errors import ScenarioError
from kwokbench.scenario.models import Scenario, scenario_model
from kwokbench.scenario.traces import expand_traces


def _node_line(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (or of its deepest existing ancestor)."""
    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
            key_node = next((k for k, _ in node.value if getattr(k, "value", None) == key), None)
            if nxt is None:
                break
            line = key_node.start_mark.line + 1 if key_node is not None else nxt.start_mark.line + 1
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def apply_overrides(doc: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``path=value`` with dotted keys and list indices (``workloads.0.count=500``); YAML values."""
    doc = copy.deepcopy(doc)
    for item in overrides:
        path, sep, raw = item.partition("=")
        if not sep or not path:
            raise ScenarioError(f"--set {item!r}: expected path=value")
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError as e:
            raise ScenarioError(f"--set {item!r}: value is not valid YAML") from e
        keys = path.split(".")
        cur: Any = doc
        for i, k in enumerate(keys):
            last = i == len(keys) - 1
            where = ".".join(keys[: i + 1])
            if isinstance(cur, list):
                if not k.isdigit() or int(k) >= len(cur):
                    raise ScenarioError(f"--set {item!r}: {where}: no list item {k} (list has {len(cur)})")
                if last:
                    cur[int(k)] = value
                else:
                    cur = cur[int(k)]
            elif isinstance(cur, dict):
                if last:
                    cur[k] = value
                else:
                    cur = cur.setdefault(k, {})
            else:
                raise ScenarioError(f"--set {item!r}: {'.'.join(keys[:i])} is not a mapping or list")
    return doc


def _not_of_kind(doc: dict[str, Any], loc: tuple[int | str, ...]) -> str | None:
    """A variant's setting that its kind does not take: say which kinds take it (``command`` is external's)."""
    if len(loc) != 3 or loc[0] != "schedulers" or not isinstance(loc[1], int):
        return None
    entry = (doc.get("schedulers") or [])[loc[1]]
    default = scheduler_kinds.DEFAULT_KIND
    binary = str(entry.get("binary") or default) if isinstance(entry, dict) else default
    owners = [n for n, k in scheduler_kinds.registry().items() if loc[2] in k.settings.model_fields]
    return (f"not a setting of binary: {binary}" +
            (f" (it applies to binary: {', '.join(owners)})" if owners else " (no scheduler kind takes it)"))


def parse_scenario(text: str, source: str = "<scenario>", overrides: list[str] | None = None) -> Scenario:
    """Validate scenario text; every problem is a ScenarioError naming file, line and field path."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise ScenarioError(f"{source}{where}: invalid YAML: {getattr(e, 'problem', None) or e}") from e
    except (ValueError, RecursionError) as e:  # e.g. surrogates, absurd nesting
        raise ScenarioError(f"{source}: invalid YAML: {e}") from e
    if not isinstance(doc, dict):
        raise ScenarioError(f"{source}: a scenario must be a YAML mapping, got {type(doc).__name__}")
    doc = apply_overrides(doc, overrides or [])
    try:
        return scenario_model().model_validate(doc)
    except ValidationError as e:
        lines = []
        for err in e.errors(include_url=False):
            loc = tuple(x for x in err["loc"] if not (isinstance(x, str) and x in ("qps", "poisson", "ramp")
                                                     and err["loc"][-1] != x))
            line = _node_line(root, loc)
            field = ".".join(str(x) for x in loc) or "(top level)"
            msg = _not_of_kind(doc, loc) if err["type"] == "extra_forbidden" else None
            lines.append(f"{source}{f':{line}' if line else ''}: {field}: {msg or err['msg']}")
        raise ScenarioError("\n".join(lines)) from None


def load_scenario(path: Path, overrides: list[str] | None = None) -> Scenario:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"cannot read scenario {path}: {getattr(e, 'strerror', None) or e}") from e
    return expand_traces(parse_scenario(text, str(path), overrides), path.parent)


