"""The reference WASM extension (``binary: wasm-extension``): kubernetes-sigs/kube-scheduler-wasm-extension's
kube-scheduler, built from its pinned source, running the variant's ``guest`` in its ``wasm`` plugin.

kwokbench writes its configuration — the variant's ``config`` or, without one, a profile enabling ``wasm`` at
multiPoint (the way its own docs and the extension's ``getWasmPluginsFromConfig`` expect it) — with the
plugin's args: ``guestURL`` (a file URL for a path or a prebuilt ``example:NAME``, or the http(s) URL as given)
and ``guest_args``. It starts the scheduler itself (not through kwokctl), so a guest that cannot be fetched or
traps at load is the scheduler's own last log line, one line, with the process stopped. It is a kube-scheduler:
its /metrics fill the summary's scheduler section (extension points included) and ``--profile scheduler``
profiles it. Its Kubernetes is v1.33.4: the fairness manifest records the skew to the control plane.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kwokbench.cluster.kwokctl import ClusterOptions, home_dir
from kwokbench.components.kube_scheduler import KubeScheduler
from kwokbench.errors import ScenarioError
from kwokbench.progress import Reporter
from kwokbench.toolchain import versions
from kwokbench.toolchain.wasm import WASM_MAGIC

BASE_CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {"multiPoint": {"enabled": [{"name": "wasm"}]}}}],
}


class WasmExtension(KubeScheduler):
    kind = "wasm-extension"

    @property
    def replaces_kube_scheduler(self) -> bool:  # type: ignore[override]
        return self.setup.attached is None

    def guest_url(self) -> str:
        """The guestURL its plugin is given; ScenarioError when a local guest is missing or not WebAssembly."""
        g = self.variant.guest or ""
        if g.startswith(("http://", "https://")):
            return g
        if g.startswith("example:"):
            from kwokbench.toolchain.wasm_extension import example

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
        self.guest_url()

    def build(self, rep: Reporter) -> None:
        from kwokbench.toolchain import wasm_extension

        self.binary = wasm_extension.build(None, rep)

    def configure(self, copts: ClusterOptions) -> None:
        super().configure(copts)
        if copts.scheduler_config is None:
            path = home_dir() / "configs" / "wasm-extension.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(BASE_CONFIG, sort_keys=False))
            copts.scheduler_config = path
        args = {**self.variant.guest_args, "guestURL": self.guest_url()}
        copts.scheduler_plugin_args = {**copts.scheduler_plugin_args, "wasm": args}

    def fairness(self) -> dict[str, Any]:
        from kwokbench.components.yunikorn import _skew

        return {"wasm_extension": {"version": versions.WASM_EXTENSION, "kubernetes": versions.WASM_EXTENSION_KUBERNETES,
                                   "skew_to_control_plane": _skew(versions.WASM_EXTENSION_KUBERNETES,
                                                                  versions.KUBERNETES),
                                   "guest": self.variant.guest, "guest_args": self.variant.guest_args}}

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        record = super().start(info, rep)
        if record is not None:  # its command reads its config before --version: the build says what ran
            record["version"] = self.version()
        return record

    def version(self) -> str:
        from kwokbench.toolchain.wasm_extension import RECIPE

        return f"Kubernetes {versions.WASM_EXTENSION_KUBERNETES}; {RECIPE.version_line()}"
