"""The typer app, its help panels and what every command shares: errors as one line, ``--version``, ``KEY=VALUE``
parameters, the verdict tables.

Heavy imports (pandas, aiohttp, the kubernetes client) happen inside commands so ``--help`` is instant.
A :class:`~kwokbench.errors.KwokbenchError` becomes one line on stderr and its exit code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from kwokbench import __version__
from kwokbench.errors import KwokbenchError, ScenarioError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Scheduler scalability harness for Kubernetes on KWOK clusters.")
# `kwokbench --help` groups the commands by what they act on, in the order of the data flow
PANEL_CLUSTER, PANEL_RUN, PANEL_ANALYSE, PANEL_HISTORY = "Cluster", "Run", "Analyse", "History"
PANEL_TOOLCHAIN = "Toolchain"
tools_app = typer.Typer(no_args_is_help=True, help="Provision and check the offline toolchain.")
app.add_typer(tools_app, name="tools", rich_help_panel=PANEL_TOOLCHAIN)

F = TypeVar("F", bound=Callable[..., Any])


def handled(fn: F) -> F:
    """Turn expected errors into one clear line and an exit code; Ctrl-C into exit 130."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from kwokbench.cli import console

        try:
            return fn(*args, **kwargs)
        except KwokbenchError as e:
            console.error(str(e))
            raise typer.Exit(e.exit_code) from None
        except KeyboardInterrupt:
            console.error("interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kwokbench {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    pass


def parse_params(items: list[str]) -> dict[str, Any]:
    """``k=v`` pairs; values are YAML scalars/flow collections (``gpus=8``, ``labels={a: b}``)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ScenarioError(f"--param {item!r}: expected key=value")
        try:
            out[key] = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError as e:
            raise ScenarioError(f"--param {item!r}: value is not valid YAML: {e}") from e
    return out


STORE_HELP = ("A PostgreSQL database a team shares, postgresql://USER@HOST:PORT/DB (the password from "
              "~/.pgpass or PGPASSWORD; ?connect_timeout=SECONDS, default 5).")
LOCATION_HELP = ("Where the run directories can be found, recorded in the store: a URL with {run_id} filled in, "
                 "e.g. https://ci.example/artifacts/{run_id} (default: this host's name and the absolute path).")
COMMIT_HELP = ("Commit of the code under test, recorded for `history` and `detect` (default: the CI environment's, "
               "else git's where the plugin or scenario lives).")
REF_HELP = "Branch or tag of that commit."


def show_verdicts(title: str, columns: list[str], rows: list[list[str]], notes: list[str], warnings: list[str]) -> None:
    """A verdict table (its second column styled by the verdict), then its notes and warnings."""
    from kwokbench.cli import console

    console.table(title, columns, [[r[0], console.styled(r[1], r[1]), *r[2:]] for r in rows])
    for n in notes:
        console.dim(n)
    for w in warnings:
        console.warn(w)
