"""jinja2 templates → Kubernetes manifests, strictly (an undefined variable is an error, never "").

Rendering thousands of objects one jinja+YAML pass each is slow, so :class:`ManifestFactory`
renders a template twice with sentinel names; when the two differ only in the name, every object is
produced by splicing names into pre-rendered JSON bytes (microseconds each). Templates that use
``index`` or other per-object values in other places fall back to rendering each object.

What the apiserver would refuse for its shape alone is refused here, at validation, with one line
naming the node group or workload: a resource quantity that is not one, an object over 1.5 MiB.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import orjson
import yaml

from kwokbench.errors import ScenarioError
from kwokbench.labels import WORKLOAD_LABEL

BUILTIN_DIR = Path(__file__).parent / "builtin_templates"
"""The repository's templates/ (a symlink, copied into wheels so an installed kwokbench has them)."""
_SENTINELS = ("kb-sentinel-a0", "kb-sentinel-b1")
_GROUP_SENTINEL = "kb-group-sentinel-c2"
_SCHEDULER_SENTINEL = "kb-scheduler-sentinel-d3"
_APP_SENTINEL = "kb-app-sentinel-e4"
_NAME_SENTINEL = "kb-name-sentinel-a7"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MAX_OBJECT_BYTES = 3 * 2**19
"""1.5 MiB: etcd's default request limit (``--max-request-bytes``); the apiserver refuses a larger object."""

QUANTITY = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?")
"""Kubernetes' quantity grammar (k8s.io/apimachinery ``resource.ParseQuantity``): a signed decimal number,
then a binary suffix (Ki … Ei), a decimal suffix (n u m "" k M G T P E) or a decimal exponent (e3, E-2)."""
_RESOURCE_LISTS = {("resources", "requests"), ("resources", "limits"), ("status", "capacity"),
                   ("status", "allocatable"), ("spec", "overhead"), ("spec", "minResources")}
"""(parent, key) of the maps whose values the apiserver parses as quantities (ResourceLists)."""

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


@functools.cache
def _env(folder: Path) -> jinja2.Environment:
    """One environment per folder: it compiles each template once (and again when the file changes)."""
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


def is_quantity(value: Any) -> bool:
    """Whether the apiserver parses ``value`` as a quantity: a string of :data:`QUANTITY`, a JSON number,
    or null (decoded as zero)."""
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return math.isfinite(value)
    return isinstance(value, str) and QUANTITY.fullmatch(value) is not None


def bad_quantities(doc: Any) -> Iterator[tuple[str, Any]]:
    """``(field path, value)`` of every value of a ResourceList (requests, limits, capacity, allocatable,
    overhead, minResources) or an ``emptyDir.sizeLimit`` that is not a Kubernetes quantity."""

    def walk(node: Any, path: str, parent: str) -> Iterator[tuple[str, Any]]:
        if isinstance(node, list):
            for i, v in enumerate(node):
                yield from walk(v, f"{path}[{i}]", parent)
        elif isinstance(node, dict):
            for k, v in node.items():
                where = f"{path}.{k}" if path else str(k)
                if (parent, k) in _RESOURCE_LISTS and isinstance(v, dict):
                    yield from ((f"{where}.{name}", q) for name, q in v.items() if not is_quantity(q))
                elif k == "sizeLimit" and parent == "emptyDir" and not is_quantity(v):
                    yield where, v
                else:
                    yield from walk(v, where, str(k))

    return walk(doc, "", "")


@dataclass(frozen=True)
class PodClaim:
    """DRA claim ``name`` of a pod: from ResourceClaimTemplate ``source`` (``shared_by`` 0), else the
    ResourceClaim ``<source>-<i // shared_by>`` that pods i share (:mod:`kwokbench.cluster.claims`)."""

    name: str
    source: str
    shared_by: int = 0


def _claim_sentinel(j: int) -> str:
    return f"__kbclaim{j}__"


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
    scheduler_names: Sequence[str] = ()
    """When given, object i's pods get ``spec.schedulerName`` ``scheduler_names[i % len]`` (the variant owning
    them when several schedulers share the cluster)."""
    pool_label: str = ""
    """When given (a duet), object i's pods also get a nodeSelector of this label equal to their schedulerName:
    the node pool of the side owning them."""
    app_labels: Sequence[str] = ()
    """Labels whose value is object i's application, ``<prefix>-app-<i // app_size>`` (YuniKorn's
    ``applicationId``)."""
    app_size: int = 1
    gang_annotations: Sequence[str] = ()
    """Pod annotations whose value is the name of the gang object i belongs to (a scheduler kind that finds its
    PodGroup by an annotation, not the scheduler-plugins label)."""
    gang_template: str | None = None
    """The template of this workload's gang objects, when its scheduler kind has PodGroups of its own."""
    gang_params: Mapping[str, Any] = field(default_factory=dict)
    """More variables of that template (e.g. the queue the gang is submitted to)."""
    scheduling_group: bool = False
    """A gang member's pod names its PodGroup in ``spec.schedulingGroup`` (kube-scheduler's native gangs)."""
    per_object: Sequence[Mapping[str, Any]] = ()
    """Variables of object i on top of ``params`` (a replayed trace: one row per pod). The template is rendered
    once per distinct row (``index`` is then that of the row's first object) and the object's name spliced in."""
    per_object_annotations: Sequence[Mapping[str, str]] = ()
    """Annotations of object i's pod (what is unique to each, kept out of the rows so that they repeat)."""
    _rendered: dict[bytes, bytes] = field(default_factory=dict, init=False, repr=False, compare=False)
    suspend: bool = False
    """A Job is created suspended (Kueue unsuspends it on admission)."""
    pod_annotations: Mapping[str, str] = field(default_factory=dict)
    """Added to the pod's (or pod template's) annotations."""
    what: str = ""
    """What the objects are, for error messages (``node group cpu``, ``workload pods``); by default the
    node group (the ``group`` param of a Node), the workload (its kwokbench.io/workload label) or the template."""
    claims: Sequence[PodClaim] = ()
    """DRA claims of every pod (a Pod template's): in ``spec.resourceClaims`` and every container's
    ``resources.claims``."""
    object_spec: Mapping[str, Any] = field(default_factory=dict)
    """Fields set on the object's own ``spec`` besides its pod templates' (a Volcano Job's queue and
    schedulerName)."""
    kind: str = ""
    """What the objects are: Pod, Job (batch/v1), VolcanoJob (batch.volcano.sh), Node, … (:func:`object_kind`)."""
    api_version: str = ""
    sample: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parts: list[list[bytes]] = []
        for i, sentinel in enumerate(_SENTINELS):
            doc = self._render(sentinel, i, _GROUP_SENTINEL, _SCHEDULER_SENTINEL if self.scheduler_names else None)
            if i == 0:
                self.sample = doc
                self.kind, self.api_version = object_kind(doc), str(doc["apiVersion"])
                self.what = self.what or self._describe()
            body = orjson.dumps(doc)
            self._check(doc, body)
            parts.append(body.split(sentinel.encode()))
        self._fast: list[bytes] | None = parts[0] if parts[0] == parts[1] and not self.per_object else None

    def _describe(self) -> str:
        if self.kind == "Node" and "group" in self.params:
            return f"node group {self.params['group']}"
        if WORKLOAD_LABEL in self.labels:
            return f"workload {self.labels[WORKLOAD_LABEL]}"
        return f"template {self.path.name}"

    def _check(self, doc: dict[str, Any], body: bytes) -> None:
        """What the apiserver would refuse for its shape alone, as one line, before any cluster exists
        (only the two objects rendered here: per-object values of other indexes are not seen)."""
        for where, value in bad_quantities(doc):
            raise ScenarioError(f"{self.what}: {where}: {value!r} is not a Kubernetes quantity "
                                "(e.g. 100m, 2, 1.5, 128Mi, 4Gi)")
        size = len(body)
        if size > MAX_OBJECT_BYTES:
            raise ScenarioError(f"{self.what}: template {self.path.name} renders a {size / 2**20:.1f} MiB "
                                f"{self.kind}; the apiserver refuses objects over {MAX_OBJECT_BYTES / 2**20:g} MiB")

    @property
    def group_prefix(self) -> str:
        """PodGroup k of this workload is named ``<group_prefix>-<k>``."""
        return f"{self.prefix}-gang"

    def group(self, i: int) -> str:
        """Name of the PodGroup (gang) object i belongs to."""
        return f"{self.group_prefix}-{i // self.gang_size}"

    def _vars(self, name: str, index: int) -> dict[str, Any]:
        own = self.per_object[index % len(self.per_object)] if self.per_object else {}
        return {**self.params, **own, "name": name, "index": index}

    def name(self, i: int) -> str:
        return f"{self.prefix}-{i}"

    def body(self, i: int) -> bytes:
        name = self.name(i)
        if self._fast is not None:
            out = name.encode().join(self._fast)
            if self.gang_size:
                out = out.replace(_GROUP_SENTINEL.encode(), self.group(i).encode())
            if self.scheduler_names:
                out = out.replace(_SCHEDULER_SENTINEL.encode(), self.scheduler_name(i).encode())
            if self.app_labels:
                out = out.replace(_APP_SENTINEL.encode(), self.app(i).encode())
            for j, c in enumerate(self.claims):
                if c.shared_by:
                    out = out.replace(_claim_sentinel(j).encode(), str(i // c.shared_by).encode())
            return out
        return orjson.dumps(self._render(name, i, self.group(i) if self.gang_size else None,
                                         self.scheduler_name(i) or None, self.app(i), claim_index=i))

    def app(self, i: int) -> str:
        """The application object i belongs to (its ``app_labels`` value)."""
        return f"{self.prefix}-app-{i // max(1, self.app_size)}"

    def scheduler_name(self, i: int) -> str:
        """The schedulerName of object i's pods ("" when the template's own is kept)."""
        return self.scheduler_names[i % len(self.scheduler_names)] if self.scheduler_names else ""

    def _manifest(self, name: str, i: int) -> dict[str, Any]:
        if not self.per_object:
            return render_manifest(self.path, self._vars(name, i))
        key = orjson.dumps(self.per_object[i % len(self.per_object)], option=orjson.OPT_SORT_KEYS)
        body = self._rendered.get(key)
        if body is None:  # a trace's rows repeat: thousands of pods, a few hundred shapes
            body = self._rendered[key] = orjson.dumps(render_manifest(self.path, self._vars(_NAME_SENTINEL, i)))
        doc: dict[str, Any] = orjson.loads(body.replace(_NAME_SENTINEL.encode(), name.encode()))
        return doc

    def _render(self, name: str, i: int, group: str | None = None, scheduler: str | None = None,
                app: str = _APP_SENTINEL, claim_index: int | None = None) -> dict[str, Any]:
        """Object i; ``claim_index`` None renders the shared claims' numbers as sentinels (the fast path's)."""
        doc = self._manifest(name, i)
        templates = pod_templates(doc)
        labels = {**self.labels, **({POD_GROUP_LABEL: group} if self.gang_size and group else {}),
                  **dict.fromkeys(self.app_labels, app)}
        if labels:
            for meta in (doc["metadata"], *(t.get("metadata") for t in templates if t is not doc)):
                if isinstance(meta, dict):
                    meta["labels"] = {**(meta.get("labels") or {}), **labels}
        if self.object_spec and doc.get("kind") != "Pod" and isinstance(doc.get("spec"), dict):
            doc["spec"].update(self.object_spec)
        for pod_spec in (t.get("spec") for t in templates):
            if self.node_selector and isinstance(pod_spec, dict):
                pod_spec["nodeSelector"] = {**(pod_spec.get("nodeSelector") or {}), **self.node_selector}
            if scheduler and isinstance(pod_spec, dict):
                pod_spec["schedulerName"] = scheduler
                if self.pool_label:
                    pod_spec["nodeSelector"] = {**(pod_spec.get("nodeSelector") or {}), self.pool_label: scheduler}
        if self.suspend and object_kind(doc) == "Job" and isinstance(doc.get("spec"), dict):
            doc["spec"]["suspend"] = True
        annotations = {**self.pod_annotations,
                       **(dict.fromkeys(self.gang_annotations, group) if self.gang_size and group else {}),
                       **(self.per_object_annotations[i % len(self.per_object_annotations)]
                          if self.per_object_annotations else {})}
        for t in templates if annotations else ():
            meta = t.setdefault("metadata", {}) if t is not doc else t.get("metadata")
            if isinstance(meta, dict):
                meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        if scheduler and object_kind(doc) == "VolcanoJob" and isinstance(doc.get("spec"), dict):
            doc["spec"]["schedulerName"] = scheduler
        if self.claims and doc.get("kind") in ("Pod", "Job"):
            for t in pod_templates(doc):  # a Job's pods: each its own claim from the template (shared_by 1)
                if isinstance(t.get("spec"), dict):
                    self._add_claims(t["spec"], claim_index)
        if self.scheduling_group and self.gang_size and group and isinstance(doc.get("spec"), dict):
            doc["spec"]["schedulingGroup"] = {"podGroupName": group}
        return doc

    def _add_claims(self, spec: dict[str, Any], i: int | None) -> None:
        entries: list[dict[str, str]] = []
        for j, c in enumerate(self.claims):
            if not c.shared_by:
                entries.append({"name": c.name, "resourceClaimTemplateName": c.source})
            else:
                k = _claim_sentinel(j) if i is None else str(i // c.shared_by)
                entries.append({"name": c.name, "resourceClaimName": f"{c.source}-{k}"})
        spec["resourceClaims"] = [*(spec.get("resourceClaims") or []), *entries]
        for container in spec.get("containers") or []:
            res = container.setdefault("resources", {})
            res["claims"] = [*(res.get("claims") or []), *({"name": c.name} for c in self.claims)]

    def labels_of_pods(self) -> dict[str, str]:
        """Labels every pod of this workload carries (the pod's, or a Job's pod template's; the first task's of a
        Volcano Job)."""
        [first, *_] = pod_templates(self.sample) or [{}]
        meta = first.get("metadata") or {}
        sentinels = (_GROUP_SENTINEL, _APP_SENTINEL)
        return {str(k): str(v) for k, v in (meta.get("labels") or {}).items() if v not in sentinels}

    def pods_per_object(self) -> int:
        """Pods one object results in: 1 for a Pod, completions for a Job, every task's replicas for a Volcano Job
        (the scheduler's work)."""
        spec = self.sample.get("spec") or {}
        if self.kind == "Job":
            return int(spec.get("completions") or spec.get("parallelism") or 1)
        if self.kind == "VolcanoJob":
            return sum(int(t.get("replicas") or 0) for t in spec.get("tasks") or [])
        return 1 if self.kind == "Pod" else 0

    def namespaced_path(self, namespace: str | None) -> str:
        """The collection URL for this kind (core and a few batch/CRD kinds we ship templates for)."""
        return collection_path(self.api_version, str(self.sample.get("kind", self.kind)), namespace)


WORKLOAD_KINDS = ("Pod", "Job", "VolcanoJob")
"""The objects a workload can make: pods, or objects whose pods a controller makes (:func:`object_kind`)."""
JOB_KINDS = ("Job", "VolcanoJob")
"""Objects whose pods kwok completes as soon as they run (its pod-complete stage matches pods owned by any kind
named Job), so ``complete_after`` applies to them."""


def object_kind(doc: Mapping[str, Any]) -> str:
    """What an object is, for kwokbench: its ``kind``, except a Volcano Job (``batch.volcano.sh`` Job), which is
    ``VolcanoJob`` so that it is never taken for a batch/v1 Job."""
    kind = str(doc.get("kind", ""))
    return "VolcanoJob" if kind == "Job" and str(doc.get("apiVersion", "")).startswith("batch.volcano.sh/") else kind


def pod_templates(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of an object, each with its ``metadata`` and ``spec``: a Pod itself, a Job's
    ``spec.template``, every task's of a Volcano Job; none for other kinds."""
    kind, spec = object_kind(doc), doc.get("spec")
    if kind == "Pod":
        return [doc]
    if not isinstance(spec, dict):
        return []
    if kind == "VolcanoJob":
        return [t["template"] for t in spec.get("tasks") or [] if isinstance(t.get("template"), dict)]
    return [spec["template"]] if isinstance(spec.get("template"), dict) else []


_PLURALS = {"Node": "nodes", "Pod": "pods", "Job": "jobs", "PodGroup": "podgroups", "Namespace": "namespaces",
            "ElasticQuota": "elasticquotas", "Deployment": "deployments", "ConfigMap": "configmaps"}


def resource_name(kind: str) -> str:
    """The resource name of ``kind`` as Kubernetes guesses it (``meta.UnsafeGuessKindToResource``): PriorityClass
    priorityclasses, NetworkPolicy networkpolicies, else the kind lower-cased with an s."""
    if kind in _PLURALS:
        return _PLURALS[kind]
    low = kind.lower()
    return low + "es" if low.endswith("s") else low[:-1] + "ies" if low.endswith("y") else low + "s"


def collection_path(api_version: str, kind: str, namespace: str | None) -> str:
    plural = resource_name(kind)
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if kind in ("Node", "Namespace") or namespace is None:
        return f"{root}/{plural}"
    return f"{root}/namespaces/{namespace}/{plural}"
