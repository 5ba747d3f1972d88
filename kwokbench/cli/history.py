"""The History panel: ``history`` and ``detect``, and the history rows ``report --history`` draws."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kwokbench.cli.app import (
    LOCATION_HELP,
    PANEL_HISTORY,
    STORE_HELP,
    app,
    handled,
    show_verdicts,
)
from kwokbench.errors import ScenarioError


def history_rows(runs: list[Path], index: Path | None, store: str | None, scenario: str | None,
                 variant: str | None, what: str) -> list[dict[str, Any]]:
    """The history ``detect`` and the trend page read: stored runs through the embedded index, or a store's rows
    — one or the other; the index's warnings (an unreadable run skipped) are printed."""
    from kwokbench.cli import console
    from kwokbench.history.index import LocalIndex, sources
    from kwokbench.history.rows import Filters
    from kwokbench.history.store import Store, open_store

    if store and (runs or index):
        raise ScenarioError(f"{what} either run directories or --store, not both (push runs to the store with "
                            "`kwokbench history RUN_DIRS --store URL`)")
    local = LocalIndex(*sources(runs or [Path("reports")], index))
    source: Store = open_store(store) if store else local
    rows = source.rows(Filters(scenario, variant))
    for w in local.history.warnings if local.history else []:
        console.warn(w)
    return rows


def draw_trend(runs: list[Path], output: Path, metric: list[str], scenario: str | None, variant: str | None,
               lookback: int | None, ack: Path | None, normalise: str, index: Path | None, store: str | None,
               baseline: bool) -> None:
    from kwokbench.cli import console
    from kwokbench.compare.detect import detect, load_acks
    from kwokbench.report.trend import write_trend

    if baseline:
        raise ScenarioError("--history draws the runs' trend over commits; --baseline goes with a comparison "
                            "report (compare any two runs in the trend's page instead)")
    acks = load_acks(ack) if ack else []
    rows = history_rows(runs, index, store, scenario, variant, "--history draws")
    result = detect(rows, metric, lookback, normalise, acks)
    path = write_trend(rows, result, output)
    for w in result.warnings:
        console.warn(w)
    changes = [c for s in result.series for c in s.changes]
    console.out.print(f"trend: {path} ({len(rows)} runs, {len(changes)} change point(s), "
                      f"{sum(c.new_regression for c in changes)} new regression(s))")




HistoryRuns = Annotated[list[Path] | None, typer.Argument(
    help="Run directories, or folders holding runs, or a history index file for the folder it indexes (default: "
    "reports).", show_default=False)]
"""The runs ``history`` and ``detect`` read."""


@app.command("history", rich_help_panel=PANEL_HISTORY)
@handled
def history_cmd(
    runs: HistoryRuns = None,
    scenario: Annotated[str | None, typer.Option(help="Only runs of this scenario.")] = None,
    variant: Annotated[str | None, typer.Option(help="Only runs of this scheduler variant.")] = None,
    metric: Annotated[list[str] | None, typer.Option(help="Only this figure: a gate metric (throughput, "
                                                     "latency_p99, …) or a dotted summary figure (repeatable; "
                                                     "default: the gate metrics, and every figure in exports).")
                      ] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, csv, json or parquet.")] = "table",
    output: Annotated[Path | None, typer.Option(help="Write the export here (default: stdout; parquet "
                                                "needs it).")] = None,
    index: Annotated[Path | None, typer.Option(help="The index file (default: .kwokbench-history.duckdb in "
                                               "the folder the runs share).")] = None,
    store: Annotated[str | None, typer.Option(help=STORE_HELP + " With RUN_DIRS: their rows are written to it "
                                              "(again: replaced); without: the runs it holds are listed.")] = None,
    location: Annotated[str | None, typer.Option(help=LOCATION_HELP)] = None,
) -> None:
    """Index stored runs (DuckDB, incrementally) and list one row per run: scenario, variant, commit, host,
    ceiling and figures; with --store, push them to a store a team shares, or list what it holds."""
    from kwokbench.cli import console
    from kwokbench.history.index import FORMATS, LocalIndex, export, figure_columns, sources
    from kwokbench.history.rows import Filters
    from kwokbench.history.store import check_location, open_store, push_rows

    if fmt not in FORMATS:
        raise ScenarioError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    check_location(location)
    shared = open_store(store) if store else None
    local = LocalIndex(*sources(runs or [Path("reports")], index))
    if shared and not runs:
        rows = shared.rows(Filters(scenario, variant))
        footer = f"store {shared.where}: {len(rows)} run(s)"
    else:
        rows = local.rows(Filters(scenario, variant))
        hist = local.history
        assert hist is not None
        for w in hist.warnings:
            console.warn(w)
        footer = f"index {hist.index}: {hist.read} run(s) read, {len(hist.rows) - hist.read} unchanged"
        if shared:
            footer += f"; {push_rows(shared, rows, location)} row(s) written to the store {shared.where}"
    if fmt != "table":
        text = export(rows, fmt, output, metric)
        if text is not None:
            typer.echo(text, nl=False)
        else:
            console.info(f"{len(rows)} run(s) written to {output}")
        return
    cols = figure_columns(rows, metric)

    def cell(r: dict[str, Any], c: str) -> str:
        v = r.get(c) if c in r else r["figures"].get(c)
        return "-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)

    table_rows = [[r["run_id"], str(r["scenario"]), str(r["variant"]), str(r["status"]), (r["commit"] or "-")[:10],
                   r["ref"] or "-", r["hostname"] or "-", cell(r, "ceiling_ratio"), *[cell(r, c) for c in cols]]
                  for r in rows]
    columns = ["run", "scenario", "variant", "status", "commit", "ref", "host", "of ceiling", *cols]
    # what a narrow log keeps first: which run and commit, then its figures; where it ran last
    left_out = console.fitted_table(f"kwokbench history ({len(rows)} runs)", columns, table_rows,
                                    ["run", "commit", "scenario", "variant", *cols, "status", "of ceiling", "host",
                                     "ref"])
    if left_out:
        console.dim(f"{len(left_out)} column(s) left out to fit {console.out.width} characters "
                    f"({', '.join(left_out)}): --format csv or --format json gives every column")
    console.dim(footer)


@app.command("detect", rich_help_panel=PANEL_HISTORY)
@handled
def detect_cmd(
    runs: HistoryRuns = None,
    metric: Annotated[list[str] | None, typer.Option(help="NAME:+MIN% (a rise is a regression) or NAME:-MIN% "
                                                     "(a drop is), MIN the smallest change reported, e.g. "
                                                     "throughput:-10% (default: throughput:-10% and "
                                                     "latency_p99:+40%).")] = None,
    scenario: Annotated[str | None, typer.Option(help="The scenario whose history to read.")] = None,
    variant: Annotated[str | None, typer.Option(help="The scheduler variant whose history to read.")] = None,
    lookback: Annotated[int | None, typer.Option(min=1, help="Only the last N commits.")] = None,
    ack: Annotated[Path | None, typer.Option(help="YAML list of accepted changes {metric, commit, reason}: "
                                             "reported, no longer failing.")] = None,
    normalise: Annotated[str, typer.Option(help="auto (by the host's ceiling when runs come from several "
                                           "hosts), ceiling or none.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    index: Annotated[Path | None, typer.Option(help="The index file (default: .kwokbench-history.duckdb in "
                                               "the folder the runs share).")] = None,
    store: Annotated[str | None, typer.Option(help=STORE_HELP + " Its runs are read instead of run "
                                              "directories (push those with `history RUN_DIRS --store`).")] = None,
) -> None:
    """Change points over stored runs in commit order (E-divisive means): exit 0 none new, 1 new regression,
    3 not enough history, 2 bad input."""
    from kwokbench.compare.detect import detect, load_acks
    from kwokbench.report.history import detect_json, detect_rows

    acks = load_acks(ack) if ack else []
    result = detect(history_rows(runs or [], index, store, scenario, variant, "detect reads"), metric or [], lookback,
                    normalise, acks)
    if as_json:
        typer.echo(detect_json(result))
        raise typer.Exit(result.exit_code)
    show_verdicts("kwokbench detect", *detect_rows(result), result.notes, result.warnings)
    raise typer.Exit(result.exit_code)
