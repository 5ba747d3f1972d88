"""The reference WASM extension (``binary: wasm-extension``): kubernetes-sigs/kube-scheduler-wasm-extension's
kube-scheduler, built from its pinned source, running the variant's ``guest`` in its ``wasm`` plugin.

kwokbench writes its configuration — the variant's ``config`` or, without one, a profile enabling ``wasm`` at
multiPoint (the way its own docs and the extension's ``getWasmPluginsFromConfig`` expect it) — with the
plugin's args: ``guestURL`` (a file URL for a path or a prebuilt ``example:NAME``, or the http(s) URL as given)
and ``guest_args``. It starts the scheduler itself (not through kwokctl), so a guest that cannot be fetched or
traps at load is the scheduler's own last log line, one line, with the process stopped. It is a kube-scheduler:
its /metrics fill the summary's scheduler section (extension points included) and ``--profile scheduler``
profiles it. Its Kubernetes is v1.33.4: the fairness manifest records the skew to the control plane.

It is built from the pinned archive: its scheduler module is ``scheduler/`` of the repository, whose go.mod
replaces ``../kubernetes/proto`` (in the archive) and pins every ``k8s.io/*`` module to v0.33.4, so it is built where
it lies, inside the extracted archive, with Kubernetes' version stamping (v1.33.4: kwokctl then passes flags a 1.33
scheduler knows). The example guests ``examples/{nodenumber,imagelocality,advanced}/main.wasm`` (TinyGo builds
committed upstream; TinyGo is not installable here) are copied next to the binary, so a scenario names them
``example:NAME``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import Field, model_validator

from kwokbench.cluster.kwokctl import ClusterOptions, home_dir
from kwokbench.components.kube_scheduler import KubeScheduler, KubeSchedulerBase
from kwokbench.errors import ScenarioError
from kwokbench.progress import Reporter
from kwokbench.toolchain import versions
from kwokbench.toolchain.install import kubernetes_ldflags
from kwokbench.toolchain.sources import PinnedSource, SourceBuild
from kwokbench.toolchain.wasm import WASM_MAGIC

MODULE = "sigs.k8s.io/kube-scheduler-wasm-extension/scheduler"
SOURCES = (PinnedSource(MODULE, "kube-scheduler-wasm-extension-9b2791f.tar.gz",
                        "ba9fe8ef6256bf94fc9e511aea7c50b97f4ef1558855470533809f24e3ab37fe",
                        "github.com/kubernetes-sigs/kube-scheduler-wasm-extension at commit 9b2791f",
                        subdir="scheduler"),)
EXAMPLES = ("nodenumber", "imagelocality", "advanced")
PLUGIN = "wasm"
"""The plugin name its configuration enables (any name whose pluginConfig decodes as its PluginConfig)."""


def build_commands(by: dict[str, Path], out: Path) -> list[list[str]]:
    return [["go", "mod", "download"],
            ["go", "build", "-trimpath", "-ldflags", kubernetes_ldflags(versions.WASM_EXTENSION_KUBERNETES),
             "-o", str(out), "./cmd/scheduler"]]


def copy_examples(by: dict[str, Path], dest: Path) -> None:
    root = by[MODULE].parent / "examples"
    (dest / "examples").mkdir()
    for name in EXAMPLES:
        src = root / name / "main.wasm"
        if src.is_file():
            shutil.copyfile(src, dest / "examples" / f"{name}.wasm")


RECIPE = SourceBuild("wasm-extension", versions.WASM_EXTENSION, versions.WASM_EXTENSION_KUBERNETES, SOURCES,
                     "kube-scheduler", MODULE, build_commands, copy_examples)


def example(name: str) -> Path:
    """The prebuilt example guest ``name`` of the pinned source (built with the scheduler)."""
    if name not in EXAMPLES:
        raise ScenarioError(f"guest example:{name}: no such example of the reference (one of: {', '.join(EXAMPLES)})")
    return RECIPE.path().parent / "examples" / f"{name}.wasm"



class WasmExtensionSpec(KubeSchedulerBase):
    """A ``binary: wasm-extension`` variant: the guest its ``wasm`` plugin loads, and the plugin's args."""

    guest: str = Field(description=(
        "The guest its `wasm` plugin loads — a .wasm file (relative to the scenario), an http(s) URL, or "
        "example:NAME for the reference's prebuilt examples (nodenumber, imagelocality, advanced)."))
    guest_args: dict[str, Any] = Field(default_factory=dict, description=(
        "More args of its `wasm` pluginConfig (e.g. guestConfig: a JSON string)."))

    @model_validator(mode="before")
    @classmethod
    def _guest(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("guest"):
            raise ValueError(f"scheduler {data.get('name', 'default')}: binary wasm-extension needs guest (a .wasm "
                             "file, an http(s) URL or example:nodenumber)")
        return data


BASE_CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {"multiPoint": {"enabled": [{"name": "wasm"}]}}}],
}


class WasmExtension(KubeScheduler):
    kind = "wasm-extension"
    title = "WASM extension"
    settings = WasmExtensionSpec
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {"wasm_extension": ("binary", "guest", "guest_args")}
    recipe = RECIPE
    variant: WasmExtensionSpec

    @property
    def replaces_kube_scheduler(self) -> bool:  # type: ignore[override]
        return self.setup.attached is None

    def guest_url(self) -> str:
        """The guestURL its plugin is given; ScenarioError when a local guest is missing or not WebAssembly."""
        g = self.variant.guest or ""
        if g.startswith(("http://", "https://")):
            return g
        if g.startswith("example:"):
            path = example(g.removeprefix("example:"))
            if not path.is_file():  # the examples come with the build
                return path.as_uri()
        else:
            path = Path(g).expanduser()
            path = path if path.is_absolute() else self.setup.base / path
            if not path.is_file():
                raise ScenarioError(f"scheduler {self.name}: guest {g}: no such file (relative to {self.setup.base})")
            with path.open("rb") as f:
                if f.read(4) != WASM_MAGIC:
                    raise ScenarioError(f"scheduler {self.name}: guest {g} is not WebAssembly (no \\0asm header)")
        return path.resolve().as_uri()

    def check(self) -> None:
        if not self.replaces_kube_scheduler:
            raise ScenarioError(f"scheduler {self.name}: kwokbench starts the WASM extension only on clusters it "
                                "creates")
        super().check()
        self.guest_url()

    def build(self, rep: Reporter) -> None:
        self.binary = RECIPE.build(None, rep)

    def own_options(self, copts: ClusterOptions) -> None:
        super().own_options(copts)
        if copts.scheduler_config is None:
            path = home_dir() / "configs" / "wasm-extension.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(BASE_CONFIG, sort_keys=False))
            copts.scheduler_config = path
        args = {**self.variant.guest_args, "guestURL": self.guest_url()}
        copts.scheduler_plugin_args = {**copts.scheduler_plugin_args, "wasm": args}

    def fairness(self) -> dict[str, Any]:
        skew = versions.skew(versions.WASM_EXTENSION_KUBERNETES, self.setup.scenario.kubernetes_for(self.variant))
        return {**super().fairness(),
                "wasm_extension": {"version": versions.WASM_EXTENSION, "kubernetes": versions.WASM_EXTENSION_KUBERNETES,
                                   "skew_to_control_plane": skew,
                                   "guest": self.variant.guest, "guest_args": self.variant.guest_args}}

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        record = super().start(info, rep)
        if record is not None:  # its command reads its config before --version: the build says what ran
            record["version"] = self.version()
        return record

    def version(self) -> str:
        return f"Kubernetes {versions.WASM_EXTENSION_KUBERNETES}; {RECIPE.version_line()}"
