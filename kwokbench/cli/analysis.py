"""The Analyse panel: ``analyse``, ``report``, ``gate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kwokbench.cli.app import (
    PANEL_ANALYSE,
    STORE_HELP,
    app,
    handled,
    show_verdicts,
)
from kwokbench.errors import ScenarioError


def _load(paths: list[Path]) -> list[Any]:
    from kwokbench.store import find_runs, load_run

    return [load_run(p) for p in find_runs(paths)]


@app.command(rich_help_panel=PANEL_ANALYSE)
@handled
def analyse(
    runs: Annotated[list[Path], typer.Argument(help="Run directories, or folders holding runs.")],
) -> None:
    """Derive each run's summary.json again from its stored raw files (offline; after analysis code improves)."""
    from kwokbench.cli import console
    from kwokbench.figures.analyse import analyse as analyse_run
    from kwokbench.report.table import summary_rows
    from kwokbench.store import find_runs

    for path in find_runs(runs):
        columns, rows = summary_rows(analyse_run(path))
        console.table(f"{path.name} (re-analysed)", columns, rows)
        console.out.print(f"summary written to {path / 'summary.json'}")


@app.command(rich_help_panel=PANEL_ANALYSE)
@handled
def report(
    runs: Annotated[list[Path] | None, typer.Argument(help="Run directories, or folders holding runs (with "
                                                      "--history: also a history index file, for the folder it "
                                                      "indexes; default reports).", show_default=False)] = None,
    baseline: Annotated[list[Path] | None, typer.Option(help="Baseline run(s) or folder; deltas with "
                                                       "confidence intervals are shown against them.")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder.")] = Path("reports/report"),
    metric: Annotated[list[str] | None, typer.Option(help="Gate metric NAME:MAX_REGRESSION for the "
                                                     "baseline comparison (repeatable); with --history, as "
                                                     "`detect --metric`: NAME:+MIN% or NAME:-MIN%.")] = None,
    history: Annotated[bool, typer.Option("--history", help="Instead: the runs' trend over commits as one "
                                          "interactive HTML file (trend.html), with detect's change points and "
                                          "a two-run comparison.")] = False,
    scenario: Annotated[str | None, typer.Option(help="With --history: the scenario whose history to draw.")
                        ] = None,
    variant: Annotated[str | None, typer.Option(help="With --history: the scheduler variant whose history "
                                                "to draw.")] = None,
    lookback: Annotated[int | None, typer.Option(min=1, help="With --history: only the last N commits.")] = None,
    ack: Annotated[Path | None, typer.Option(help="With --history: detect's ack file (accepted changes are "
                                             "marked acked).")] = None,
    normalise: Annotated[str, typer.Option(help="With --history: as detect's (auto, ceiling or none).")] = "auto",
    index: Annotated[Path | None, typer.Option(help="With --history: the index file (default: "
                                               ".kwokbench-history.duckdb in the folder the runs share).")] = None,
    store: Annotated[str | None, typer.Option(help="With --history: " + STORE_HELP + " Its runs are drawn "
                                              "instead of run directories.")] = None,
) -> None:
    """Charts (PNG), one self-contained HTML file and a Markdown summary from stored runs (offline); with
    --history, the trend of a history instead."""
    from kwokbench.cli import console

    if history:
        from kwokbench.cli.history import draw_trend  # here: the History panel registers after this one

        draw_trend(runs or [], output, metric or [], scenario, variant, lookback, ack, normalise, index, store,
               bool(baseline))
        return
    given = [o for o, v in (("--scenario", scenario), ("--variant", variant), ("--lookback", lookback),
                            ("--ack", ack), ("--index", index), ("--store", store)) if v is not None]
    if given or normalise != "auto":
        raise ScenarioError(f"{(given or ['--normalise'])[0]} goes with --history")
    from kwokbench.report.render import write_report

    if not runs:
        raise ScenarioError("report: name the run directories or folders to report on")
    base = _load(baseline or [])
    cands = _load(runs)
    rep = write_report(base + [r for r in cands if r.path not in {b.path for b in base}], output, base or None,
                       metric or None)
    for w in rep.warnings:
        console.warn(w)
    console.out.print(f"report: {rep.html}\nmarkdown: {rep.markdown}\ncharts: {len(rep.charts)} PNG in {output}")
    for line in rep.left_out:
        console.dim(f"chart left out, {line}")




@app.command("gate", rich_help_panel=PANEL_ANALYSE)
@handled
def gate_cmd(
    baseline: Annotated[list[Path], typer.Option(help="Baseline run(s) or folder (repeatable).")],
    candidate: Annotated[list[Path], typer.Option(help="Candidate run(s) or folder (repeatable).")],
    metric: Annotated[list[str] | None, typer.Option(help="NAME:MAX_REGRESSION, e.g. throughput:10% "
                                                     "(default: the scenario's gates, else throughput:10% and "
                                                     "latency_p99:10%); unscheduled is always gated.")] = None,
    baseline_variant: Annotated[str | None, typer.Option(help="Only the baseline runs of this scheduler "
                                                         "variant (e.g. one variant of an interleaved run).")] = None,
    candidate_variant: Annotated[str | None, typer.Option(help="Only the candidate runs of this scheduler "
                                                          "variant.")] = None,
    github: Annotated[bool, typer.Option(help="In GitHub Actions: append the verdict table to "
                                         "$GITHUB_STEP_SUMMARY, and annotate each regression (error) and "
                                         "inconclusive metric (warning).")] = False,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here.")] = None,
    looks: Annotated[int, typer.Option(min=1, max=100, help="This gate is one of N planned looks at growing runs "
                                       "(pairs added until it decides, as the GitHub Action does): each test is "
                                       "made at 0.05/N, so the sequence's false alarms stay within 0.05.")] = 1,
) -> None:
    """Compare candidate runs with baseline runs: exit 0 pass, 1 regression, 3 inconclusive, 2 bad input.
    Both sides holding the same scheduler variants, none chosen: each variant is gated against itself."""
    import os

    from kwokbench.compare.gate import gate
    from kwokbench.report.render import gate_markdown, gate_rows, github_annotations
    from kwokbench.report.render import junit as junit_xml

    base, cand = _load(baseline), _load(candidate)
    result = gate(base, cand, metric or [], baseline_variant, candidate_variant, looks)
    if looks > 1:
        result.notes.append(f"one of {looks} planned looks: each test at {0.05 / looks:.3g}")
    show_verdicts("kwokbench gate", *gate_rows(result), result.notes, result.warnings)
    if junit:
        junit.write_text(junit_xml(result))
    if github:
        path = os.environ.get("GITHUB_STEP_SUMMARY")
        if not path:
            raise ScenarioError("--github: GITHUB_STEP_SUMMARY is not set (not running in GitHub Actions?)")
        with open(path, "a") as f:
            f.write(gate_markdown(result))
        for line in github_annotations(result):
            typer.echo(line)
    raise typer.Exit(result.exit_code)
