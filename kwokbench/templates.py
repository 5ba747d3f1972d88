"""jinja2 templates → Kubernetes manifests, strictly (an undefined variable is an error, never "").

Rendering thousands of objects one jinja+YAML pass each is slow, so :class:`ManifestFactory`
renders a template twice with sentinel names; when the two differ only in the name, every object is
produced by splicing names into pre-rendered JSON bytes (microseconds each). Templates that use
``index`` or other per-object values in other places fall back to rendering each object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import orjson
import yaml

from kwokbench.errors import ScenarioError

BUILTIN_DIR = Path(__file__).parent / "builtin_templates"
"""The repository's templates/ (a symlink, copied into wheels so an installed kwokbench has them)."""
_SENTINELS = ("kb-sentinel-a0", "kb-sentinel-b1")
_GROUP_SENTINEL = "kb-group-sentinel-c2"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

# libyaml is ~10x faster; the pure-Python loader is a fallback only
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def resolve_template(name: str | Path, base: Path | None = None) -> Path:
    """A template path as given, relative to ``base`` (the scenario's folder), or a builtin name."""
    p = Path(name).expanduser()
    candidates = [p] if p.is_absolute() else [*(([base / p]) if base else []), Path.cwd() / p, BUILTIN_DIR / p]
    if not p.suffix:
        candidates += [BUILTIN_DIR / f"{p}.yaml.j2"]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    builtin = ", ".join(sorted(t.name.removesuffix(".yaml.j2") for t in BUILTIN_DIR.glob("*.yaml.j2")))
    raise ScenarioError(f"template not found: {name} (looked in {', '.join(str(c.parent) for c in candidates)}; "
                        f"builtin templates: {builtin})")


def _env(folder: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(folder), str(BUILTIN_DIR)]),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False,
    )
    env.filters["tojson"] = lambda v: orjson.dumps(v).decode()
    return env


def render_text(path: Path, variables: Mapping[str, Any]) -> str:
    try:
        return _env(path.parent).get_template(path.name).render(**variables)
    except jinja2.UndefinedError as e:
        raise ScenarioError(f"{path}: template variable {e.message} (pass it as a param)") from e
    except jinja2.TemplateSyntaxError as e:
        raise ScenarioError(f"{e.filename or path}:{e.lineno}: template syntax error: {e.message}") from e
    except jinja2.TemplateError as e:
        raise ScenarioError(f"{path}: template error: {e}") from e


def render_manifest(path: Path, variables: Mapping[str, Any]) -> dict[str, Any]:
    """Render one object and check it looks like a Kubernetes manifest."""
    text = render_text(path, variables)
    try:
        doc = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ScenarioError(f"{path}: rendered template is not valid YAML{where}: "
                            f"{getattr(e, 'problem', e)}") from e
    return validate_manifest(doc, path)


def validate_manifest(doc: Any, path: Path) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise ScenarioError(f"{path}: rendered template is not a YAML mapping")
    missing = [k for k in ("apiVersion", "kind") if not doc.get(k)]
    if not isinstance(doc.get("metadata"), dict) or not doc["metadata"].get("name"):
        missing.append("metadata.name")
    if missing:
        raise ScenarioError(f"{path}: rendered manifest lacks {', '.join(missing)}")
    return doc


@dataclass
class ManifestFactory:
    """Produces the JSON body of object ``i`` named ``f"{prefix}-{i}"`` from one template."""

    path: Path
    params: Mapping[str, Any]
    prefix: str
    labels: Mapping[str, str] = field(default_factory=dict)
    """Added to the object's labels and to its pod template's (so a Job's pods carry them too)."""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    """Merged into the pod's (or pod template's) nodeSelector."""
    gang_size: int = 0
    """When > 0, object i also gets the label ``scheduling.x-k8s.io/pod-group: <prefix>-gang-<i // gang_size>``."""
    kind: str = ""
    api_version: str = ""
    sample: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        docs = [self._render(s, i, _GROUP_SENTINEL) for i, s in enumerate(_SENTINELS)]
        self.sample = docs[0]
        self.kind, self.api_version = str(docs[0]["kind"]), str(docs[0]["apiVersion"])
        parts = [orjson.dumps(d).split(s.encode()) for d, s in zip(docs, _SENTINELS, strict=True)]
        self._fast: list[bytes] | None = parts[0] if parts[0] == parts[1] else None

    @property
    def group_prefix(self) -> str:
        """PodGroup k of this workload is named ``<group_prefix>-<k>``."""
        return f"{self.prefix}-gang"

    def group(self, i: int) -> str:
        """Name of the PodGroup (gang) object i belongs to."""
        return f"{self.group_prefix}-{i // self.gang_size}"

    def _vars(self, name: str, index: int) -> dict[str, Any]:
        return {**self.params, "name": name, "index": index}

    def name(self, i: int) -> str:
        return f"{self.prefix}-{i}"

    def body(self, i: int) -> bytes:
        name = self.name(i)
        if self._fast is not None:
            out = name.encode().join(self._fast)
            return out.replace(_GROUP_SENTINEL.encode(), self.group(i).encode()) if self.gang_size else out
        return orjson.dumps(self._render(name, i, self.group(i) if self.gang_size else None))

    def _render(self, name: str, i: int, group: str | None = None) -> dict[str, Any]:
        doc = render_manifest(self.path, self._vars(name, i))
        labels = {**self.labels, **({POD_GROUP_LABEL: group} if self.gang_size and group else {})}
        if labels:
            for meta in (doc["metadata"], ((doc.get("spec") or {}).get("template") or {}).get("metadata")):
                if isinstance(meta, dict):
                    meta["labels"] = {**(meta.get("labels") or {}), **labels}
        if self.node_selector:
            spec = doc.get("spec") or {}
            pod_spec = (spec.get("template") or {}).get("spec") if doc.get("kind") != "Pod" else spec
            if isinstance(pod_spec, dict):
                pod_spec["nodeSelector"] = {**(pod_spec.get("nodeSelector") or {}), **self.node_selector}
        return doc

    def labels_of_pods(self) -> dict[str, str]:
        """Labels every pod of this workload carries (the pod's, or a Job's pod template's)."""
        tmpl = ((self.sample.get("spec") or {}).get("template") or {}).get("metadata")
        meta = tmpl if self.kind == "Job" and isinstance(tmpl, dict) else self.sample.get("metadata") or {}
        return {str(k): str(v) for k, v in (meta.get("labels") or {}).items() if v != _GROUP_SENTINEL}

    def pods_per_object(self) -> int:
        """Pods one object results in: 1 for a Pod, completions for a Job (the scheduler's work)."""
        if self.kind == "Job":
            spec = self.sample.get("spec") or {}
            return int(spec.get("completions") or spec.get("parallelism") or 1)
        return 1 if self.kind == "Pod" else 0

    def namespaced_path(self, namespace: str | None) -> str:
        """The collection URL for this kind (core and a few batch/CRD kinds we ship templates for)."""
        return collection_path(self.api_version, self.kind, namespace)


_PLURALS = {"Node": "nodes", "Pod": "pods", "Job": "jobs", "PodGroup": "podgroups", "Namespace": "namespaces",
            "ElasticQuota": "elasticquotas", "Deployment": "deployments", "ConfigMap": "configmaps"}


def collection_path(api_version: str, kind: str, namespace: str | None) -> str:
    plural = _PLURALS.get(kind) or re.sub(r"(?<!^)(?=[A-Z])", "", kind).lower() + "s"
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if kind in ("Node", "Namespace") or namespace is None:
        return f"{root}/{plural}"
    return f"{root}/namespaces/{namespace}/{plural}"
