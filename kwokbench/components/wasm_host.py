"""kwokbench's WASM host plugin (plugins/wasm) compiled into kube-scheduler, running the variant's ``wasm:``
guest: the guest is built (seconds, cached) and handed to the ``Wasm`` plugin as its ``guestURL``."""

from __future__ import annotations

from pathlib import Path

from kwokbench.cluster.kwokctl import ClusterOptions
from kwokbench.components.go_plugin import GoPlugin
from kwokbench.progress import Reporter
from kwokbench.toolchain.wasm import HOST_PLUGIN, build_guest, guest_dir


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

    def configure(self, copts: ClusterOptions) -> None:
        super().configure(copts)
        if self.guest is None:
            self.guest = build_guest(self._guest_dir())  # cached: a no-op once built
        copts.scheduler_plugin_args = {**copts.scheduler_plugin_args, HOST_PLUGIN: {"guestURL": self.guest.as_uri()}}
