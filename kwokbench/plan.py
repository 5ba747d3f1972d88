"""What a scenario will create, known before any cluster exists: each variant's scheduler kind and the
components a run starts, the workloads' manifests with what each kind writes into its pods, and the checks
``validate`` runs. Light on purpose (no analysis libraries, no HTTP client): ``kwokbench validate`` is this
module, and :mod:`kwokbench.runner` builds its runs on it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kwokbench import components
from kwokbench.cluster.claims import pod_claims
from kwokbench.cluster.nodes import NodeGroup
from kwokbench.components import Base as Component
from kwokbench.components import PodSettings, Setup
from kwokbench.components.kueue.cluster import COMPLETE_DELAY_ANNOTATION, QUEUE_LABEL
from kwokbench.components.kueue.component import Kueue
from kwokbench.errors import ScenarioError
from kwokbench.labels import RUN_LABEL, WORKLOAD_LABEL
from kwokbench.manifests import JOB_KINDS, WORKLOAD_KINDS, ManifestFactory, pod_templates, resolve_template
from kwokbench.progress import Reporter
from kwokbench.scenario import Scenario, WorkloadSpec
from kwokbench.scenario.duet import POOL_LABEL as DUET_POOL_LABEL
from kwokbench.scheduler_kinds import SchedulerSpec
from kwokbench.toolchain import versions
from kwokbench.trace.kube import DELETE_AFTER_ANNOTATION, dra_pod_params, pod_annotations, pod_params

if TYPE_CHECKING:
    from kwokbench.cluster.attach import AttachedCluster
    from kwokbench.toolchain import Toolchain


def node_groups(scenario: Scenario, base: Path) -> list[NodeGroup]:
    """The scenario's node groups as the cluster creates them, with their DRA devices."""
    return [NodeGroup(g.name, g.count, resolve_template(g.template, base), g.params,
                      devices=tuple(d.model_dump() for d in g.devices))
            for g in scenario.cluster.node_groups]


def pod_settings(scenario: Scenario, w: WorkloadSpec, kinds: dict[str, Component],
                 variant: SchedulerSpec | None, requests: dict[str, str], kind: str) -> PodSettings:
    """What the scheduler kind(s) owning phase ``w``'s pods write into them: the variant's, or, when several
    run together, every owner's schedulerName (dealt in turn) and labels."""
    if scenario.concurrent_schedulers:
        owners = [v for v in scenario.schedulers if w.scheduler in (None, v.name)]
        merged = PodSettings()
        for v in owners:
            one = _settings_of(kinds[v.name], w, requests, kind)
            merged.labels.update(one.labels)
            merged.annotations.update(one.annotations)
            merged.gang_annotations = (*merged.gang_annotations, *one.gang_annotations)
            merged.object_kinds &= one.object_kinds
            if one.group_labels:
                merged.group_labels, merged.group_size = one.group_labels, one.group_size
        merged.scheduler_name = None
        return merged
    if variant is None:
        return PodSettings()
    return _settings_of(kinds[variant.name], w, requests, kind)


def _settings_of(c: Component, w: WorkloadSpec, requests: dict[str, str], kind: str) -> PodSettings:
    return c.pod_settings(w, requests, kind)


def pod_scheduler_names(scenario: Scenario, w: WorkloadSpec, variant: SchedulerSpec | None,
                        own: PodSettings | None = None) -> list[str]:
    """The schedulerNames the pods of phase ``w`` are dealt (empty: the template's own is kept)."""
    if scenario.concurrent_schedulers:
        owners = [v for v in scenario.schedulers if w.scheduler in (None, v.name)]
        return [v.effective_scheduler_name for v in owners]
    return [own.scheduler_name] if variant is not None and own is not None and own.scheduler_name else []


def pod_requests_of(f: ManifestFactory) -> dict[str, str]:
    """The resource requests of one pod of ``f`` (summed over its containers, as quantities)."""
    [first, *_] = pod_templates(f.sample) or [{}]
    pod = first.get("spec")
    out: dict[str, str] = {}
    for c in (pod or {}).get("containers") or []:
        for r, q in ((c.get("resources") or {}).get("requests") or {}).items():
            out[r] = str(q) if r not in out else out[r]  # first container's value (templates have one)
    return out


def manifest_factories(scenario: Scenario, base: Path, run_label: str, attached: AttachedCluster | None = None,
                       variant: SchedulerSpec | None = None,
                       kinds: dict[str, Component] | None = None) -> list[ManifestFactory]:
    """Render every workload template once before any cluster exists: bad templates fail fast.

    On an attached cluster every object also carries the attachment's label (``down`` deletes by it)
    and its pods are pinned to the attachment's fake nodes. Pods get the schedulerName of the variant
    owning them (:func:`pod_scheduler_names`) and what its scheduler kind writes (:func:`pod_settings`)."""
    out = []
    kinds = kinds or scheduler_kinds(scenario, base, None, attached)
    queued = scenario.cluster.kueue is not None and (variant is None or variant.kueue)
    for w in scenario.workloads:
        to_queue = queued and w.queue is not None
        # the run label in every name: a reused cluster may still hold the objects of earlier runs
        labels = {RUN_LABEL: run_label, WORKLOAD_LABEL: w.name,
                  **({QUEUE_LABEL: w.queue} if to_queue and w.queue else {}),
                  **(attached.labels if attached else {})}
        shape = dra_pod_params if w.trace and w.trace.gpus == "dra" else pod_params
        rows = [shape(p) for p in w.trace_pods] if w.trace else ()
        own_ann = [pod_annotations(p, w.trace.lifetimes) for p in w.trace_pods] if w.trace else ()
        plain = ManifestFactory(resolve_template(w.template, base), w.params, f"{w.name}-{run_label}", labels=labels,
                                per_object=rows)
        own = pod_settings(scenario, w, kinds, variant, pod_requests_of(plain), plain.kind)
        if plain.kind in WORKLOAD_KINDS and plain.kind not in own.object_kinds:
            who = f"scheduler {variant.name}" if variant is not None else "the schedulers sharing the cluster"
            raise ScenarioError(f"workload {w.name}: template {w.template} makes a {plain.kind}, which {who} does not "
                                f"run (it runs: {', '.join(sorted(own.object_kinds))})")
        f = ManifestFactory(resolve_template(w.template, base), w.params, f"{w.name}-{run_label}",
                            labels={**own.labels, **labels}, per_object=rows, per_object_annotations=own_ann,
                            suspend=to_queue,
                            pod_annotations={**own.annotations,
                                             **({COMPLETE_DELAY_ANNOTATION: w.complete_after}
                                                if w.complete_after else {}),
                                             **({DELETE_AFTER_ANNOTATION: w.delete_after} if w.delete_after
                                                else {})},
                            gang_size=w.gang.size if w.gang else 0, gang_annotations=own.gang_annotations,
                            gang_template=own.gang_template, gang_params=own.gang_params,
                            scheduling_group=own.scheduling_group,
                            app_labels=own.group_labels, app_size=own.group_size or 1,
                            node_selector=attached.labels if attached else {},
                            scheduler_names=pod_scheduler_names(scenario, w, variant, own),
                            pool_label=DUET_POOL_LABEL if scenario.duet and scenario.concurrent_schedulers else "",
                            claims=pod_claims(w, f"{w.name}-{run_label}"), object_spec=own.object_spec)
        if f.pods_per_object() == 0:
            raise ScenarioError(f"workload {w.name}: template {w.template} makes a {f.kind}, not one of "
                                f"{', '.join(WORKLOAD_KINDS)} with pods")
        if w.delete_after and f.kind != "Pod":
            raise ScenarioError(f"workload {w.name}: delete_after applies to Pod templates, template "
                                f"{w.template} makes a {f.kind}")
        if w.claims and f.kind not in ("Pod", "Job"):
            raise ScenarioError(f"workload {w.name}: claims apply to Pod and Job templates, template "
                                f"{w.template} makes a {f.kind}")
        shared = next((c for c in w.claims if c.shared_by != 1), None)
        if shared is not None and f.kind == "Job":
            raise ScenarioError(f"workload {w.name}: claim {shared.name} shared_by {shared.shared_by} on a Job's "
                                "pods: a Job's pods get a claim each (shared_by 1)")
        if w.queue and f.kind != "Job":
            raise ScenarioError(f"workload {w.name}: queue applies to Jobs, template {w.template} makes a {f.kind}")
        if w.complete_after and f.kind not in JOB_KINDS:
            raise ScenarioError(f"workload {w.name}: complete_after applies to Jobs ({', '.join(JOB_KINDS)}), "
                                f"template {w.template} makes a {f.kind}")
        if f.kind != "Pod" and not scenario.cluster.controller_manager:
            raise ScenarioError(f"workload {w.name}: a {f.kind}'s pods are made by kube-controller-manager (or by a "
                                "scheduler's own controller, then collected by kube-controller-manager's garbage "
                                "collector), which cluster.controller_manager: false turns off")
        if w.gang and f.kind != "Pod":
            raise ScenarioError(f"workload {w.name}: gang members must be Pods, template {w.template} makes a {f.kind}")
        if w.gang and own.gang_template and "template" in w.gang.model_fields_set:
            who = f"scheduler {variant.name}" if variant is not None else "the schedulers sharing the cluster"
            raise ScenarioError(f"workload {w.name}: gang.template {w.gang.template} would not be used: {who} makes "
                                f"its own PodGroups ({own.gang_template}); leave gang.template out")
        if w.gang:
            gang_factory(w, f, base)
        out.append(f)
    return out


def gang_factory(w: WorkloadSpec, members: ManifestFactory, base: Path) -> ManifestFactory:
    """The PodGroups of a gang phase: PodGroup k is named like the group label of members k*size…"""
    assert w.gang is not None
    g = ManifestFactory(resolve_template(members.gang_template or w.gang.template, base),
                        {"min_member": w.gang.min_member or w.gang.size,
                         "schedule_timeout_seconds": w.gang.schedule_timeout_seconds, **members.gang_params},
                        members.group_prefix, labels=dict(members.labels))
    if g.kind != "PodGroup":
        raise ScenarioError(f"workload {w.name}: gang.template {w.gang.template} makes a {g.kind}, not a PodGroup")
    return g


def variant_base(base: Path, variant: SchedulerSpec) -> Path:
    """The folder a variant's relative paths resolve against: its ``root`` if it has one, else ``base`` (the
    scenario file's folder)."""
    return Path(variant.root) if variant.root else base


def setup_of(scenario: Scenario, base: Path, variant: SchedulerSpec, tc: Toolchain | None,
             attached: AttachedCluster | None = None, reused: bool = False) -> Setup:
    tc = tc.for_kubernetes(scenario.kubernetes_for(variant)) if tc is not None else None  # its own release
    return Setup(scenario, variant_base(base, variant), variant, tc,  # type: ignore[arg-type]
                 concurrent=scenario.concurrent_schedulers, reused=reused, attached=attached)


def scheduler_kinds(scenario: Scenario, base: Path, tc: Toolchain | None,
                    attached: AttachedCluster | None = None, reused: bool = False) -> dict[str, Component]:
    """Variant name → its scheduler component (checked: a directory that is no plugin is a ScenarioError)."""
    return {v.name: components.scheduler(setup_of(scenario, base, v, tc, attached, reused))
            for v in scenario.schedulers}


def run_components(setup: Setup, variants: list[SchedulerSpec] | None = None) -> list[Component]:
    """The run's components, in start order: its scheduler(s) (every variant's when they run together), the
    extender its configuration names, Kueue."""
    v = setup.variant
    if setup.concurrent:
        out: list[Component] = [components.scheduler(Setup(setup.scenario, variant_base(setup.base, s), s,
                                                           setup.toolchain, concurrent=True)) for s in variants or []]
    else:
        one = components.scheduler(setup)
        out = [*(one.addons() if isinstance(one, components.Scheduler) else []), one]
    if setup.scenario.cluster.kueue is not None and v.kueue and not setup.concurrent:
        out.append(Kueue(setup.scenario))
    return out


def build_components(scenario: Scenario, base: Path, variants: list[SchedulerSpec], tc: Toolchain,
                     rep: Reporter) -> None:
    """Every binary the variants' components need, into the cache, before any cluster exists."""
    for v in variants:
        for c in run_components(setup_of(scenario, base, v, tc), scenario.schedulers):
            c.build(rep)


def check_scenario(scenario: Scenario, base: Path, reused: bool = False,
                   variants: Sequence[SchedulerSpec] | None = None) -> None:
    """Everything that can be checked before a cluster exists: templates render, config files and plugin
    directories exist (``reused``: for a run on an existing cluster). Raises ScenarioError (one line) on the first
    problem. ``variants``: only those are to run (``--variant``), so only they are checked."""
    kinds = scheduler_kinds(scenario, base, None, reused=reused)
    chosen = list(variants) if variants is not None and not scenario.concurrent_schedulers else scenario.schedulers
    # every variant's pods (what its scheduler kind writes into them can be wrong too)
    for v in [None] if scenario.concurrent_schedulers else chosen:
        manifest_factories(scenario, base, "validate", variant=v, kinds=kinds)
    for v in chosen:
        kinds[v.name].check()
        libs = kinds[v.name].libraries()
        problem = versions.skew_problem(libs, scenario.kubernetes_for(v)) if libs else None
        if problem:
            raise ScenarioError(f"scheduler {v.name} ({v.binary}): {problem}; pick another kubernetes: release")
    for g in scenario.cluster.node_groups:
        ManifestFactory(resolve_template(g.template, base), {**g.params, "group": g.name}, f"kb-{g.name}")
    restarts = [e.action for e in scenario.chaos if e.action == "restart-scheduler"]
    if restarts and (scenario.concurrent_schedulers or any(k.replaces_kube_scheduler for k in kinds.values())):
        raise ScenarioError("chaos restart-scheduler restarts kwokctl's kube-scheduler; it is not available with "
                            "concurrent schedulers or a scheduler kwokbench starts itself (" +
                            ", ".join(sorted({v.binary for v in scenario.schedulers
                                              if kinds[v.name].replaces_kube_scheduler})) + ")")
