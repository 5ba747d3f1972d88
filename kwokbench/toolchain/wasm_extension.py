"""The reference WASM extension: kubernetes-sigs/kube-scheduler-wasm-extension's kube-scheduler (with its
``wasm`` plugin, wazero inside), built from the pinned source archive, and its prebuilt example guests.

Its scheduler module is ``scheduler/`` of the repository; its go.mod replaces ``../kubernetes/proto`` (in the
archive) and pins every ``k8s.io/*`` module to v0.33.4, so it is built where it lies, inside the extracted
archive, with Kubernetes' version stamping (v1.33.4: kwokctl then passes flags a 1.33 scheduler knows). The
example guests ``examples/{nodenumber,imagelocality,advanced}/main.wasm`` (TinyGo builds committed upstream;
TinyGo is not installable here) are copied next to the binary, so a scenario names them ``example:NAME``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kwokbench.errors import ScenarioError
from kwokbench.progress import Reporter, Silent
from kwokbench.toolchain import versions
from kwokbench.toolchain.install import kubernetes_ldflags
from kwokbench.toolchain.sources import PinnedSource, SourceBuild

MODULE = "sigs.k8s.io/kube-scheduler-wasm-extension/scheduler"
SOURCES = (PinnedSource(MODULE, "kube-scheduler-wasm-extension-9b2791f.tar.gz",
                        "ba9fe8ef6256bf94fc9e511aea7c50b97f4ef1558855470533809f24e3ab37fe", "", subdir="scheduler"),)
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


def build(source: Path | None = None, reporter: Reporter | None = None, force: bool = False) -> Path:
    return RECIPE.build(source, reporter or Silent(), force)


def example(name: str) -> Path:
    """The prebuilt example guest ``name`` of the pinned source (built with the scheduler)."""
    if name not in EXAMPLES:
        raise ScenarioError(f"guest example:{name}: no such example of the reference (one of: {', '.join(EXAMPLES)})")
    return RECIPE.path().parent / "examples" / f"{name}.wasm"
