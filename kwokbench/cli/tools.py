"""``kwokbench tools``: provision and check the offline toolchain."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kwokbench.cli.app import (
    handled,
    tools_app,
)
from kwokbench.errors import KwokbenchError, ScenarioError

# ---- tools ----------------------------------------------------------------------------------------


@tools_app.command("install")
@handled
def tools_install(
    what: Annotated[list[str] | None, typer.Argument(help="Only these schedulers built from pinned sources "
                                                     "(yunikorn, wasm-extension, …: `kwokbench tools doctor` "
                                                     "lists them). Default: the toolchain (kwok, "
                                                     "etcd, Kubernetes, scheduler-plugins).",
                                                     show_default=False)] = None,
    source: Annotated[str, typer.Option("--from", help="source (build from Go modules), release "
                                        "(kwokctl downloads official binaries) or auto.")] = "auto",
    source_path: Annotated[Path | None, typer.Option("--source", help="With those: a directory of the pinned "
                                                     "source archives (checked by sha256) or of source checkouts, "
                                                     "or one archive; default $KWOKBENCH_SOURCES, else "
                                                     "~/.cache/kwokbench/sources; nothing is downloaded, a "
                                                     "missing one is named with the repository and tag to check "
                                                     "out.")] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even when cached binaries are valid.")] = False,
    core_only: Annotated[bool, typer.Option(help="Skip the optional scheduler-plugins build (runs build it "
                                            "on demand when a variant uses it).")] = False,
    kubernetes: Annotated[str | None, typer.Option(help="The Kubernetes release to build (a tag from v1.35.0 on, "
                                                   "e.g. v1.37.2; a pre-release only where the module "
                                                   "proxy serves every module it is built from: none does "
                                                   "here), beside the others in the cache; default the pinned "
                                                   "one.", show_default=False)] = None,
    substitute: Annotated[list[str] | None, typer.Option(
        "--substitute", help="MODULE@VERSION: build a staging module the module proxy refuses at the release's own "
        "version (e.g. k8s.io/kube-proxy for v1.37.0-beta.0) at this served version instead; recorded, with the "
        "packages the binaries import from it, in the build's build.json. The error naming a refused module "
        "suggests one. Repeatable.", show_default=False)] = None,
) -> None:
    """Build (or download) kwok, kwokctl, Kubernetes, etcd and scheduler-plugins into the version-keyed cache;
    or, named, a scheduler built from pinned sources (yunikorn, volcano, kai, wasm-extension)."""
    from kwokbench.cli import console
    from kwokbench.scheduler_kinds import source_built
    from kwokbench.toolchain import Toolchain, provenance, versions
    from kwokbench.toolchain.install import OPTIONAL
    from kwokbench.toolchain.provenance import parse_substitutes

    if what and (kubernetes or substitute):
        raise ScenarioError("--kubernetes and --substitute build the control plane; a scheduler built from sources "
                            "has its own")
    built = source_built()
    if what:
        unknown = [w for w in what if w not in built]
        if unknown:
            raise ScenarioError(f"tools install {unknown[0]}: not a scheduler built from sources "
                                f"(one of: {', '.join(built)})")
        for w in dict.fromkeys(what):
            binary = built[w].build(source_path, console.RichReporter(), force)
            console.info(f"{w}: {binary}")
        return
    if source_path is not None:
        raise ScenarioError("--source applies to schedulers built from pinned sources: tools install "
                            f"{' | '.join(built)} --source DIR")
    if source not in ("auto", "source", "release"):
        raise ScenarioError(f"--from {source!r}: expected source, release or auto")
    try:
        tc = Toolchain(kubernetes=versions.kubernetes_tag(kubernetes or versions.KUBERNETES),
                       substitutes=parse_substitutes(substitute or []))
    except ValueError as e:
        raise ScenarioError(f"--kubernetes: {e}") from e
    if substitute and not force and tc.mode() == "source":
        record = tc.build_record()
        raise ScenarioError(f"Kubernetes {tc.kubernetes} is already built (with "
                            f"{provenance.describe(record) if record else 'its own modules'}); --substitute "
                            "applies to a build: add --force to rebuild")
    extras = () if core_only or source == "release" else OPTIONAL
    mode = tc.install(source, console.RichReporter(), force=force, extras=extras)  # type: ignore[arg-type]
    console.info(f"toolchain ready ({mode}) in {tc.cache / 'toolchain'}")


@tools_app.command("build-scheduler")
@handled
def tools_build_scheduler(
    plugin: Annotated[Path, typer.Argument(help="Go plugin directory: a module whose package exports Name and New.")],
    force: Annotated[bool, typer.Option(help="Rebuild even when a binary of this plugin version is cached.")] = False,
) -> None:
    """Compile an out-of-tree scheduler plugin into kube-scheduler (cached per plugin version)."""
    from kwokbench.cli import console
    from kwokbench.toolchain.plugin import build_scheduler

    binary = build_scheduler(plugin, console.RichReporter(), force=force)
    console.info(f"kube-scheduler with {plugin}: {binary}")
    console.info(f"use it in a scenario: schedulers: [{{name: mine, binary: {plugin}, config: <config enabling "
                 f"the plugin>}}] (binary paths are relative to the scenario file)")


@tools_app.command("build-wasm")
@handled
def tools_build_wasm(
    directory: Annotated[Path, typer.Argument(help="A Go module whose main package is a WASM guest.")],
    force: Annotated[bool, typer.Option(help="Rebuild even if cached.")] = False,
) -> None:
    """Compile a WebAssembly scheduler-plugin guest (GOOS=wasip1, standard Go) into the cache."""
    from kwokbench.cli import console
    from kwokbench.toolchain.wasm import build_guest

    wasm = build_guest(directory, console.RichReporter(), force)
    console.info(f"wasm guest {directory}: {wasm}")
    console.info(f"use it in a scenario: schedulers: [{{name: mine, binary: <plugins/wasm>, config: <config enabling "
                 f"Wasm>, wasm: {directory}}}]")


@tools_app.command("kinds")
@handled
def tools_kinds() -> None:
    """List the scheduler kinds a scenario's `binary:` can name (the installed entry points of group
    kwokbench.schedulers): each kind's module and whether it is built from pinned sources."""
    from importlib.metadata import entry_points

    from kwokbench.cli import console
    from kwokbench.scheduler_kinds import GROUP, registry

    where = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    rows = [[name, k.title, where.get(name, "?"), "yes" if k.recipe is not None else "no"]
            for name, k in sorted(registry().items())]
    console.table("scheduler kinds (binary:)", ["kind", "name", "module", "built from pinned sources"], rows)


@tools_app.command("doctor")
@handled
def tools_doctor() -> None:
    """Show every component with version, path and status; exit 2 if anything is missing."""
    from kwokbench.cli import console
    from kwokbench.toolchain import Toolchain
    from kwokbench.toolchain.install import check_go

    tc = Toolchain()
    rows: list[list[str]] = []
    problems: list[str] = []
    try:
        go = check_go()
        rows.append(["go", go.removeprefix("go"), str(__import__("shutil").which("go")), console.styled("ok", "ok")])
    except KwokbenchError as e:
        rows.append(["go", "-", "-", console.styled("problem", "problem")])
        problems.append(str(e))
    optional = {c.name for c in tc.components if c.optional}
    for s in tc.check():
        name = f"{s.component}/{s.binary}" if s.component in optional else s.binary
        if not s.ok and s.component in optional:
            rows.append([name, s.version, str(s.path),
                         console.styled("optional", f"{s.problem} (optional, built on demand)")])
            continue
        rows.append([name, s.version, str(s.path),
                     console.styled("ok", "ok") if s.ok else console.styled("problem", s.problem)])
        if not s.ok:
            problems.append(f"{s.binary} {s.version}: {s.problem} at {s.path}; run `kwokbench tools install`")
    from kwokbench.scheduler_kinds import source_built

    for name, r in source_built().items():
        ok, where, detail = r.status()
        rows.append([name, r.version, where, console.styled("ok", "ok " + detail) if ok else
                     console.styled("optional", f"{detail} (optional: `kwokbench tools install {name}`, or built "
                                                "on first use)")])
    console.table("kwokbench toolchain", ["component", "version", "path", "status"], rows)
    for p in problems:
        console.error(p)
    if problems:
        raise typer.Exit(2)
