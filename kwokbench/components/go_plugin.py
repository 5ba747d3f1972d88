"""A kube-scheduler with an out-of-tree Go plugin compiled in (``binary:`` the plugin's directory).

With a ``wasm:`` guest the plugin is kwokbench's WASM host (plugins/wasm) and the variant runs that guest: the
guest is built (seconds, cached) and handed to the ``Wasm`` plugin as its ``guestURL``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from kwokbench.cluster.kwokctl import ClusterOptions
from kwokbench.components import Base, Setup
from kwokbench.components.kube_scheduler import KubeScheduler, KubeSchedulerSpec
from kwokbench.errors import ScenarioError
from kwokbench.progress import Reporter
from kwokbench.scheduler_kinds import named
from kwokbench.toolchain.plugin import build_scheduler, plugin_dir
from kwokbench.toolchain.wasm import HOST_PLUGIN, build_guest, guest_dir


class PluginSpec(KubeSchedulerSpec):
    """A variant whose ``binary`` is a Go plugin directory (relative to the scenario)."""

    wasm: str | None = Field(None, description=(
        "A WebAssembly plugin guest: a Go module directory (relative to the scenario) built by `kwokbench tools "
        "build-wasm` and handed to the `Wasm` host plugin as its pluginConfig `guestURL`. The variant's `binary` "
        "is the host plugin's directory (plugins/wasm) and its `config` enables `Wasm`; a changed guest is "
        "rebuilt in seconds, never the scheduler."))


class GoPlugin(KubeScheduler):
    kind = "plugin"
    title = "Go plugin"
    settings = PluginSpec
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {"wasm_guest": ("wasm",)}
    under_test = frozenset({"wasm_guest_path"})
    variant: PluginSpec

    def __init__(self, setup: Setup, directory: Path | None = None) -> None:
        super().__init__(setup)
        self.directory = directory or Path()

    @classmethod
    def create(cls, setup: Setup) -> Base:
        v = setup.variant
        path = Path(v.binary).expanduser()
        path = path if path.is_absolute() else setup.base / path
        if not path.is_dir():
            raise ScenarioError(f"scheduler {v.name}: binary {v.binary!r} is neither {', '.join(named())} nor a "
                                f"plugin directory (relative to {setup.base})")
        return WasmHost(setup, path) if getattr(v, "wasm", None) else cls(setup, path)

    def check(self) -> None:
        super().check()
        plugin_dir(self.directory)

    def build(self, rep: Reporter) -> None:
        self.binary = build_scheduler(self.directory, rep, kubernetes=self.setup.toolchain.kubernetes)

    def fairness(self) -> dict[str, Any]:
        return {**super().fairness(), "wasm_guest": self.variant.wasm}


class WasmHost(GoPlugin):
    guest: Path | None = None

    def _guest_dir(self) -> Path:
        assert self.variant.wasm is not None
        path = Path(self.variant.wasm).expanduser()
        return path if path.is_absolute() else self.setup.base / path

    def check(self) -> None:
        super().check()
        guest_dir(self._guest_dir())

    def build(self, rep: Reporter) -> None:
        super().build(rep)
        self.guest = build_guest(self._guest_dir(), rep)

    def own_options(self, copts: ClusterOptions) -> None:
        super().own_options(copts)
        if self.guest is None:
            self.guest = build_guest(self._guest_dir())  # cached: a no-op once built
        copts.scheduler_plugin_args = {**copts.scheduler_plugin_args, HOST_PLUGIN: {"guestURL": self.guest.as_uri()}}

    def fairness(self) -> dict[str, Any]:
        return {**super().fairness(), "wasm_guest_path": self.guest.as_uri() if self.guest else ""}
