"""Any scheduler binary (``binary: external``): its argv with placeholders, readiness path, metrics path,
version command and manifests, as the scenario describes it; started and stopped as a process of the cluster
(:mod:`kwokbench.cluster.schedulers`)."""

from __future__ import annotations

import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from kwokbench.cluster import schedulers as own
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, free_port
from kwokbench.components import cluster_options, own_component_name
from kwokbench.components.kube_scheduler import KubeScheduler, KubeSchedulerSpec
from kwokbench.errors import ScenarioError
from kwokbench.progress import Reporter

PLACEHOLDERS = ("kubeconfig", "server", "metrics_port", "scheduler_name", "kube_scheduler", "config", "workdir",
                "scenario_dir")


class ExternalSpec(KubeSchedulerSpec):
    """A ``binary: external`` variant: the command that starts it and how to tell it is ready and measure it."""

    command: list[str] | None = Field(None, min_length=1, description=(
        "The scheduler's argv. Placeholders filled by kwokbench: {kubeconfig} (admin "
        "kubeconfig of the cluster), {server} (apiserver URL), {metrics_port} (a free port, or metrics_port), "
        "{scheduler_name}, {kube_scheduler} (the toolchain's kube-scheduler), {config} (a "
        "KubeSchedulerConfiguration rendered from `config` with the kubeconfig, scheduler_name and client "
        "limits filled in), {workdir} (a directory of its own), {scenario_dir}. Without `command`, an attached "
        "cluster's running scheduler is selected by scheduler_name alone."))
    metrics_path: str | None = Field(None, pattern=r"^/", description=(
        "Path of its Prometheus metrics on metrics_port (scraped each second like kube-scheduler's). Absent: its "
        "metrics are listed as missing."))
    metrics_port: int | None = Field(None, ge=1, le=65535, description=(
        "A fixed metrics port, when the scheduler cannot be told {metrics_port}."))
    metrics_scheme: Literal["http", "https"] = Field("http", description=(
        "Scheme of metrics and readiness (https: certificate not verified, the admin client certificate "
        "presented)."))
    ready_path: str | None = Field(None, pattern=r"^/", description=(
        "Readiness path on the metrics port (e.g. /healthz) that must answer 200; absent: ready once the process "
        "has stayed up for 3 s."))
    version_command: list[str] | None = Field(None, min_length=1, description=(
        "Argv printing its version for the fairness manifest (default: command[0] --version; placeholders as in "
        "command)."))
    manifests: list[str] = Field(default_factory=list, description=(
        "YAML files (relative to the scenario) applied before it starts: its CRDs (waited for until established) "
        "and objects such as a ConfigMap it reads."))

    @model_validator(mode="after")
    def _named(self) -> ExternalSpec:
        if not self.scheduler_name:
            raise ValueError(f"scheduler {self.name}: binary external needs scheduler_name (the schedulerName "
                             "its pods carry)")
        return self


def placeholders_in(argv: list[str]) -> set[str]:
    return {f for a in argv for _, f, _, _ in string.Formatter().parse(a) if f is not None}


def check_command(v: ExternalSpec) -> None:
    """Unknown placeholders (or broken braces) in ``command``/``version_command``: a ScenarioError."""
    for what, argv in (("command", v.command), ("version_command", v.version_command)):
        if not argv:
            continue
        try:
            unknown = sorted(placeholders_in(argv) - set(PLACEHOLDERS))
        except ValueError as e:
            raise ScenarioError(f"scheduler {v.name}: {what}: {e} (write a literal brace as {{{{ or }}}})") from e
        if unknown:
            raise ScenarioError(f"scheduler {v.name}: {what}: unknown placeholder(s) "
                                f"{', '.join('{' + u + '}' for u in unknown)} (known: "
                                f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)})")


def fill(argv: list[str], values: dict[str, str]) -> list[str]:
    return [a.format_map(values) for a in argv]


def manifest_files(v: ExternalSpec, base: Path) -> list[Path]:
    out = []
    for m in v.manifests:
        p = Path(m).expanduser()
        p = p if p.is_absolute() else base / p
        if not p.is_file():
            raise ScenarioError(f"scheduler {v.name}: manifest {m}: no such file (relative to {base})")
        out.append(p)
    return out


def plan(v: ExternalSpec, info: ClusterInfo, copts: ClusterOptions, component: str, kube_scheduler: Path,
         scenario_dir: Path) -> own.Launch:
    """How to start variant ``v`` on the cluster ``info``: its command with the placeholders filled in."""
    assert v.command
    workdir = info.dir / "schedulers" / v.name
    name = v.effective_scheduler_name
    config = own.write_config(copts, workdir, info.kubeconfig, name)
    port = v.metrics_port or free_port()
    values = {"kubeconfig": str(info.kubeconfig), "server": info.server, "metrics_port": str(port),
              "scheduler_name": name, "kube_scheduler": str(kube_scheduler), "config": str(config),
              "workdir": str(workdir), "scenario_dir": str(scenario_dir)}
    argv = fill(v.command, values)
    base = f"{v.metrics_scheme}://127.0.0.1:{port}"
    return own.Launch(v.name, component, argv, workdir, name,
                      metrics_url=base + v.metrics_path if v.metrics_path else None,
                      ready_url=base + v.ready_path if v.ready_path else None, https=v.metrics_scheme == "https",
                      ready_timeout=v.ready_timeout_seconds,
                      version_argv=fill(v.version_command, values) if v.version_command else [argv[0], "--version"])


class External(KubeScheduler):
    kind = "external"
    title = "external"
    settings = ExternalSpec
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {"scheduler_command": ("command",)}
    variant: ExternalSpec

    @property
    def replaces_kube_scheduler(self) -> bool:  # type: ignore[override]
        return self.setup.attached is None

    def check(self) -> None:
        if self.setup.attached is not None and self.variant.command:
            raise ScenarioError(f"scheduler {self.name}: on an attached cluster kwokbench does not start schedulers; "
                                "drop command and keep scheduler_name to select one already running")
        super().check()
        check_command(self.variant)
        manifest_files(self.variant, self.setup.base)

    def fairness(self) -> dict[str, Any]:
        return {**super().fairness(), "scheduler_command": self.variant.command}

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        if not self.replaces_kube_scheduler:
            return None  # an attached cluster's running scheduler, selected by scheduler_name
        v = self.variant
        if not v.command:
            raise ScenarioError(f"scheduler {v.name}: binary external without command selects a scheduler already "
                                "running on an attached cluster (up --kubeconfig); give it a command to start here")
        assert isinstance(info, ClusterInfo)
        # one variant alone is the run's scheduler: measured as kube-scheduler, like kwokctl's
        component = own_component_name(v.name) if self.setup.concurrent else "kube-scheduler"
        copts = cluster_options(self.setup.scenario, self.setup.base, v, info.name, self.setup.toolchain)
        self.own_options(copts)
        launch = plan(v, info, copts, component, self.setup.toolchain.path("kube-scheduler"), self.setup.base)
        self._info = info
        with rep.status(f"starting scheduler {v.name} ({launch.scheduler_name})"):
            self._record = {"kind": self.kind,
                            **own.start_all([launch], info, manifest_files(v, self.setup.base))[0]}
        return self._record
