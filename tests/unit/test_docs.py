"""The manual (mkdocs.yml, docs/) cannot drift from the code.

- The generated reference pages are rendered again from the code and compared with the committed ones.
- ``mkdocs build --strict`` builds the site: no broken link, missing anchor or page left out of the navigation.
- Every ```console block is run: ``$ `` lines are commands (``sh`` in the repository, this checkout's kwokbench
  first on PATH), the lines after one its expected output; a line ``...`` stands for any lines, ``...`` inside a
  line for any text. Examples that need a cluster are ```bash blocks, which are not run.
- The scenario catalogue lists every scenario file with its sizes, and the summary reference names every
  top-level section of ``summary.json``.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from docs import figures
from kwokbench.cli import docs_gen
from kwokbench.scenario import load_scenario
from tests.support.traces import HAVE_ALIBABA

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _page(path: Path) -> str:
    """A page as the site shows it: its stored figures filled in (docs/figures.py) where it opts in."""
    text = path.read_text()
    return figures.render(text) if text.startswith("---\nrender_macros: true\n") else text
REGENERATE = f"`{docs_gen.REGENERATE}` (python -m kwokbench.cli.docs_gen)"


@pytest.mark.parametrize("page", sorted(str(p) for p in docs_gen.GENERATED))
def test_generated_reference_pages_match_the_code(page: str) -> None:
    want = docs_gen.GENERATED[Path(page)]()
    path = ROOT / page
    have = path.read_text() if path.exists() else ""
    if have != want:
        diff = "".join(list(difflib.unified_diff(have.splitlines(True), want.splitlines(True), f"{page} (committed)",
                                                 f"{page} (from the code)"))[:60])
        pytest.fail(f"{page} is out of date with the code: run {REGENERATE} and commit it.\n{diff}", pytrace=False)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """Every link and anchor resolves and every page is in the navigation (mkdocs.yml's ``validation``)."""
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    problems = [line for line in res.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert res.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(problems or res.stderr.splitlines()[-20:])


# ---- the console examples ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    command: str
    expected: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def console_examples() -> list[Example]:
    out = []
    for path in sorted(DOCS.rglob("*.md")):
        lines = path.read_text().splitlines()
        inside = False
        current: tuple[int, str, list[str]] | None = None
        for n, line in enumerate(lines, 1):
            if line.strip().startswith("```"):
                if not inside and line.strip() == "```console":
                    inside = True
                    continue
                if inside:
                    if current:
                        out.append(Example(str(path.relative_to(ROOT)), current[0], current[1], tuple(current[2])))
                    inside, current = False, None
                continue
            if not inside:
                continue
            if line.startswith("$ "):
                if current:
                    out.append(Example(str(path.relative_to(ROOT)), current[0], current[1], tuple(current[2])))
                current = (n, line[2:], [])
            elif current is not None:
                current[2].append(line)
    return out


EXAMPLES = console_examples()


def _line_matches(expected: str, actual: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part) for part in expected.split("...")), actual) is not None


def matches(expected: list[str], actual: list[str]) -> bool:
    """``actual`` fits ``expected``, where a line ``...`` is any number of lines (``...`` in a line: any text)."""

    @functools.cache
    def fit(i: int, j: int) -> bool:
        if i == len(expected):
            return j == len(actual)
        if expected[i].strip() == "...":
            return any(fit(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and _line_matches(expected[i], actual[j]) and fit(i + 1, j + 1)

    return fit(0, 0)


def _trim(lines: list[str]) -> list[str]:
    lines = [line.rstrip() for line in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def test_the_matcher_elides() -> None:
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "b"], ["a", "b"])
    assert matches(["x ... z"], ["x yyy z"])
    assert not matches(["a", "d"], ["a", "b", "d"])
    assert not matches(["a"], ["a", "b"])


def test_the_manual_has_console_examples() -> None:
    assert len(EXAMPLES) >= 5, [str(e) for e in EXAMPLES]


@pytest.fixture(scope="module")
def example_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``kwokbench`` on PATH is this checkout's, run by this interpreter; its state goes to a temporary home."""
    tmp = tmp_path_factory.mktemp("docs-examples")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kwokbench"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kwokbench "$@"\n')
    shim.chmod(0o755)
    path = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])
    pythonpath = os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p)
    return {**os.environ, "PATH": path, "PYTHONPATH": pythonpath, "COLUMNS": "100", "NO_COLOR": "1",
            "TERM": "dumb", "KWOKBENCH_HOME": str(tmp / "home"), "KWOKBENCH_CACHE": str(tmp / "cache")}


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_console_example(example: Example, example_env: dict[str, str]) -> None:
    res = subprocess.run(["sh", "-c", example.command], cwd=ROOT, env=example_env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=120)  # interleaved, as a terminal shows them
    actual = _trim(res.stdout.splitlines())
    expected = _trim(list(example.expected))
    assert res.returncode == 0, f"{example}: `{example.command}` exited {res.returncode}:\n" + "\n".join(actual)
    assert matches(expected, actual), (f"{example}: the output of `{example.command}` is not what the manual shows.\n"
                                       "--- the manual\n" + "\n".join(expected) + "\n--- the command\n"
                                       + "\n".join(actual))


# ---- the catalogue and the summary reference ----------------------------------------------------------------


def _catalogue() -> dict[str, list[str]]:
    rows = {}
    for line in (DOCS / "scenarios.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`([-\w]+\.yaml)`", cells[0]) if line.startswith("|") else None
        if m:
            rows[m.group(1)] = cells
    return rows


def test_the_catalogue_lists_every_scenario_with_its_size() -> None:
    rows = _catalogue()
    files = {p.name: p for p in (ROOT / "scenarios").glob("*.yaml")}
    missing, stale = sorted(set(files) - set(rows)), sorted(set(rows) - set(files))
    assert not missing and not stale, ("docs/scenarios.md must have one line per file in scenarios/: "
                                       f"missing {missing}, stale {stale}")
    for name, cells in rows.items():
        sc = load_scenario(files[name])
        if not HAVE_ALIBABA and "alibaba-gpu-2023/" in files[name].read_text():
            continue  # loaded from the stand-in trace: its sizes are not the real trace's
        first = [int(m.group()) if (m := re.match(r"\d+", c)) else None for c in cells[2:5]]
        want = [sum(g.count for g in sc.cluster.node_groups), sum(w.count for w in sc.workloads), len(sc.schedulers)]
        assert first == want, f"docs/scenarios.md, {name}: nodes, objects, variants {first}, the file has {want}"


def test_the_catalogues_run_times_are_quoted_from_data() -> None:
    """The *runs* column is measured: each figure in it is quoted from stored data or stands beside a link to the
    results page that renders it (checked to be on that page), never typed alone."""
    typed = {name: figs for name, cells in _catalogue().items() if (figs := unbacked_figures(cells[6]))}
    assert not typed, f"docs/scenarios.md types run times by hand: {typed}"


_RUN_TIME = re.compile(r"(?i)\bruns in\b|\bfinishes\b[^.]*\bminutes?\b|\babout \d+(\s*[–-]\s*\d+)? min|"
                       r"\b\d+\s*[–-]\s*\d+ min\b|\b\d+ min (a|per) variant")


def test_only_the_catalogue_says_how_long_a_scenario_runs() -> None:
    """A run time is a measured figure: the catalogue's *runs* column holds it, beside the results it came from. A
    scenario's description that says it too drifts (batch-schedulers.yaml said 10 minutes, its results 4.6)."""
    said = [f"{p.name}: {m.group()!r}" for p in sorted((ROOT / "scenarios").glob("*.yaml"))
            if (m := _RUN_TIME.search(load_scenario(p).description or ""))]
    assert not said, f"run times belong in docs/scenarios.md's runs column: {said}"
    assert _RUN_TIME.search("Runs in about 10 minutes at 1000 nodes.") and _RUN_TIME.search("3-6 min per variant")


def _keys(module: Path, function: str, names: tuple[str, ...]) -> set[str]:
    """String keys a function stores into the named dicts (``summary["x"] = …``, ``out = {"x": …}``) or returns as
    a dict literal."""
    tree = ast.parse(module.read_text())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function)
    keys = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) \
                and node.value.id in names and isinstance(node.slice, ast.Constant):
            keys.add(str(node.slice.value))
        built = isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict) and any(
            isinstance(t, ast.Name) and t.id in names for t in (node.targets if isinstance(node, ast.Assign)
                                                                 else [node.target]))
        if built or isinstance(node, ast.Return):
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign | ast.Return) else None
            if isinstance(value, ast.Dict):
                keys |= {str(k.value) for k in value.keys if isinstance(k, ast.Constant)}
    return keys


def test_every_section_of_the_summary_is_described() -> None:
    pkg = ROOT / "kwokbench"
    sections = (_keys(pkg / "figures" / "summary.py", "summarize", ())
                | _keys(pkg / "figures" / "analyse.py", "analyse", ("summary", "section"))
                | _keys(pkg / "metrics" / "derive.py", "derive", ("out",))
                | _keys(pkg / "ceiling.py", "cpu_shares", ("summary",)))
    page = (DOCS / "reference" / "summary.md").read_text()
    missing = sorted(k for k in sections if not re.search(rf"`{re.escape(k)}[`.\[]", page))
    assert not missing, f"docs/reference/summary.md does not describe summary.json's {missing}"


def test_the_readme_is_a_front_page_whose_links_resolve() -> None:
    """The manual lives in docs/; the README points into it (GitHub renders both), so its links must resolve."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150, "README.md is the front page: move details into docs/"
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    broken = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert targets and not broken, f"README.md links to missing files: {broken}"


_RESULTS_LINK = re.compile(r"\]\(([^)#\s]*results/[\w-]+\.md)(#[\w-]+)?\)")
_MEASURED = re.compile(r"(?<![\w.\-/@])(\d+\.\d+)(?![\w.]*\d)(?!\.\d)")
"""A number with one decimal point, not part of a version (v1.36.4, Apache-2.0, 1.8.0-1)."""
_MEASURED_WHOLE = re.compile(r"(?<![\w./-])((?:(?:about|took|in|within|after) )?\d+ min \d+ s|"
                             r"(?:about|took|in|within|after) \d+ ?(?:ms|s|min|minutes|seconds|hours)|\d+ pods/s)"
                             r"(?![\w/-])")
"""A whole number that reads as measured: a duration in minutes and seconds, one said to be about, taken, in, within
or after so long, or a scheduling rate. (A setting of that shape is quoted from where it is set, ``code`` or
``scenario``, or spelled in words when it is no one's setting, a target.)"""


def _measured(text: str) -> list[str]:
    return [*_MEASURED.findall(text), *_MEASURED_WHOLE.findall(text)]


def _quotes(text: str) -> list[str]:
    """The places a page quotes figures: a paragraph or list item, or one cell of a table row."""
    out = []
    for block in re.split(r"\n\s*\n|\n(?=\s*[-*] )", text):
        for line_or_block in (block.splitlines() if block.lstrip().startswith("|") else [block]):
            out += line_or_block.split("|") if line_or_block.lstrip().startswith("|") else [line_or_block]
    return out


def test_a_figure_quoted_beside_a_link_to_its_results_page_is_that_pages_figure() -> None:
    """A measured figure (a number with a decimal point, or a whole one that reads as measured) typed next to a link
    to a results page must stand on that page: the results page is its one source, and a copy that drifted from it
    fails here. (A figure a macro quotes from stored data is its data's, wherever it stands.)"""
    stale = []
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for quote in _quotes(_prose(page.read_text())):
            sources = [(page.parent / m.group(1)).resolve() for m in _RESULTS_LINK.finditer(quote)]
            sources = [s for s in sources if s.is_file() and s != page.resolve()]
            if not sources:
                continue
            text = " ".join(_page(s) for s in sources)
            stale += [f"{page.relative_to(ROOT)}: {n} is not on {', '.join(s.name for s in sources)}"
                      for n in sorted(set(_measured(quote))) if n not in text]
    assert not stale, "\n".join(stale)


@pytest.mark.parametrize("page", sorted((DOCS / "results").glob("*.md")), ids=lambda p: p.name)
def test_every_section_with_measured_figures_says_when(page: Path) -> None:
    """A measured figure is dated: each section of a results page that quotes one (a number with a decimal point)
    names the date it was measured or written down, so a reader can tell an old figure from a new one."""
    undated = [section.splitlines()[0] for section in re.split(r"\n(?=#{1,2} )", _page(page))
               if not section.startswith("## Measure it again") and _MEASURED.search(section)
               and not re.search(r"\b20\d\d-\d\d-\d\d\b", section)]
    assert not undated, f"{page.name}: sections with figures but no date: {undated}"


@pytest.mark.parametrize("page", sorted((DOCS / "results").glob("*.md")), ids=lambda p: p.name)
def test_every_section_with_a_scheduling_rate_sets_it_against_a_ceiling(page: Path) -> None:
    """A rate of pods scheduled means little on its own on a shared 2-core host: each section of a results page
    that quotes one (pods/s) says what it is against this host's in-process ceiling (a ratio, or the ceiling it
    was measured beside)."""
    bare = [section.splitlines()[0] for section in re.split(r"\n(?=#{1,2} )", _page(page))
            if not section.startswith("## Measure it again") and re.search(r"\d pods/s", section)
            and not re.search(r"ceiling", section, flags=re.I)]
    assert not bare, f"{page.name}: sections with pods/s but no ceiling: {bare}"


# ---- every results page opens with the commands that measure it again, from a fresh clone -------------------------


def _first_bash_block(page: Path) -> list[str]:
    """The command lines of a page's first ```bash block (comments stripped), if it comes before its second section."""
    text = page.read_text()
    m = re.search(r"```bash\n(.*?)```", text, flags=re.S)
    assert m and text[:m.start()].count("\n## ") <= 1, f"{page.name}: no ```bash block of commands at its top"
    return [line.split("  #", 1)[0].strip() for line in m.group(1).splitlines() if line.strip()]


GROUPS = ("tools",)
"""kwokbench's commands that are groups of subcommands (``kwokbench tools install``): a stored command's options are
its subcommand's."""


def _flags(cmd: list[str]) -> list[str]:
    return [a.split("=", 1)[0] for a in cmd if a.startswith("--")]


_HELPS: dict[tuple[str, ...], str] = {}
"""Each command's --help, asked once for the file's tests (the same environment, example_env, for all)."""


def _help(argv: list[str], env: dict[str, str]) -> str:
    key = tuple(argv)
    if key not in _HELPS:
        res = subprocess.run([*argv, "--help"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, f"{' '.join(argv)} --help: exit {res.returncode}\n{res.stderr}"
        _HELPS[key] = res.stdout
    return _HELPS[key]


@pytest.mark.parametrize("page", sorted((DOCS / "results").glob("*.md")), ids=lambda p: p.name)
def test_a_results_page_starts_with_commands_that_run_here(page: Path, example_env: dict[str, str]) -> None:
    """Each command of the page's first block, in dry-run form: `make install` is a target, `tools install` names
    kinds built from pinned sources, a scenario validates with its --set, a benchmark or a command knows every
    option given. A step that went missing, or an option that was renamed, fails here, not on a reader's machine."""
    import shlex

    lines = _first_bash_block(page)
    assert lines[:2] == ["make install", ".venv/bin/kwokbench tools install"], lines[:2]
    kb = [sys.executable, "-m", "kwokbench"]
    for line in lines[1:]:
        cmd = shlex.split(line)
        if cmd[0] == ".venv/bin/python":
            script = ROOT / cmd[1]
            assert script.is_file(), f"{page.name}: {cmd[1]} does not exist"
            shown = _help([sys.executable, str(script)], example_env)
        else:
            assert cmd[0] == ".venv/bin/kwokbench", f"{page.name}: {line}: neither kwokbench nor a benchmark"
            if cmd[1:3] == ["tools", "install"] and len(cmd) > 3:
                kinds = subprocess.run([*kb, "tools", "kinds"], cwd=ROOT, env=example_env, capture_output=True,
                                       text=True, timeout=60).stdout
                pinned = {row.split("│")[1].strip() for row in kinds.splitlines()
                          if row.count("│") >= 5 and row.split("│")[4].strip() == "yes"}
                valued = ("--source", "--kubernetes", "--from")  # the options of `tools install` that take a value
                names = [a for i, a in enumerate(cmd[3:], 3) if not a.startswith("--") and cmd[i - 1] not in valued]
                assert set(names) <= pinned, f"{page.name}: tools install {names}: pinned kinds are {pinned}"
            shown = _help([*kb, *[a for a in cmd[1:3] if not a.startswith("-") and "/" not in a]], example_env)
        if cmd[1] in ("run", "benchmarks/bench_scenario.py"):  # the scenario it runs validates, with its --set
            sets = [a for i, a in enumerate(cmd) if i and cmd[i - 1] == "--set"]
            arms = [a.partition("=")[2] for i, a in enumerate(cmd) if i and cmd[i - 1] == "--arm"] or [""]
            for arm in arms:  # bench_scenario's --arm NAME=SET;SET: each arm's overrides beside the common ones
                extra = [*sets, *(x.strip() for x in arm.split(";") if x.strip())]
                res = subprocess.run([*kb, "validate", cmd[2], *(x for s in extra for x in ("--set", s))], cwd=ROOT,
                                     env=example_env, capture_output=True, text=True, timeout=120)
                assert res.returncode == 0, f"{page.name}: {line}: {res.stderr}"
        unknown = [f for f in _flags(cmd) if not re.search(re.escape(f) + r"(?![\w-])", shown)]
        assert not unknown, f"{page.name}: {line}: options {unknown} are not in its --help"


SNIPPET_KEYS = {"schedulers", "workloads", "cluster", "chaos", "gates", "duet", "seed", "concurrent_schedulers"}
"""Top-level scenario keys: a ```yaml block of the docs holding only these (and a scenario's name fields) is a
scenario, or a fragment of one."""


def _scenario_snippets() -> list[tuple[str, str]]:
    import yaml

    out = []
    for page in [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]:
        for i, m in enumerate(re.finditer(r"```yaml\n(.*?)```", page.read_text(), re.S)):
            try:
                doc = yaml.safe_load(m.group(1))
            except yaml.YAMLError:
                continue
            if isinstance(doc, dict) and set(doc) & SNIPPET_KEYS and not (
                    set(doc) - SNIPPET_KEYS - {"schema_version", "name", "description", "kubernetes_version"}):
                out.append((f"{page.relative_to(ROOT)}#{i}", m.group(1)))
    return out


@pytest.mark.parametrize(("where", "text"), _scenario_snippets(), ids=lambda x: x if "#" in x else "")
def test_every_scenario_snippet_validates(where: str, text: str) -> None:
    """A scenario in the docs validates as written, its paths relative to scenarios/; a fragment (only some
    top-level keys) does so completed from scenarios/quickstart.yaml, or from the scenario its first line names
    (`# beside scenarios/dra.yaml`). A snippet whose first line says it lives elsewhere (`# in your repository…`)
    is checked without its paths, which resolve there."""
    import yaml

    from kwokbench.plan import check_scenario
    from kwokbench.scenario import parse_scenario

    first = text.splitlines()[0]
    beside = re.fullmatch(r"# beside (scenarios/[\w.-]+\.yaml)", first)
    base = yaml.safe_load((ROOT / (beside.group(1) if beside else "scenarios/quickstart.yaml")).read_text())
    doc = yaml.safe_load(text)
    merged = {**base, **doc, "cluster": {**base["cluster"], **(doc.get("cluster") or {})}}
    sc = parse_scenario(yaml.safe_dump(merged), where)
    if not first.startswith("# in "):
        check_scenario(sc, ROOT / "scenarios")


def test_commands_in_the_docs_run_from_a_clone() -> None:
    """Commands use the project's virtualenv (`.venv/bin/python`, never a bare `python`) and write relative
    folders, never this machine's paths: in the manual, and in what a benchmark's --help or a shipped scenario's
    comments tell a user to run."""
    bad = []
    for page in [*sorted(DOCS.rglob("*.md")), ROOT / "README.md", *sorted((ROOT / "benchmarks").glob("*.py")),
                 *sorted((ROOT / "scenarios").rglob("*.yaml"))]:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if re.search(r"(^|[`\s(])python3? (-m |benchmarks/|tests/)", line) or re.search(r"(^|\s)/(work|root)/",
                                                                                         line):
                bad.append(f"{page.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)


# ---- the stored figures (docs/results/data, docs/figures.py) ---------------------------------------------------------


def test_every_stored_figure_says_where_it_came_from(example_env: dict[str, str]) -> None:
    """Each run of a stored figure names its value, date, command and commit (loading refuses one that does not); the
    command is kwokbench's (a group's subcommand too: ``tools install``) or a benchmark's with options they have, or a
    target of the Makefile, and the commit is one of this repository's."""
    import shlex

    stored = figures.figures()
    assert stored, "no stored figures"
    origins = [(fig.key, run) for fig in stored.values() for run in fig.runs]
    origins += [(name, figures.bench_data(name)) for name in figures.benchmarks()]
    commits = subprocess.run(["git", "rev-list", "--all"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    shallow = len(commits) < 50  # a shallow CI clone holds too little history to find the older commits in
    makefile = (ROOT / "Makefile").read_text()
    for key, run in origins:
        assert shallow or any(c.startswith(str(run["commit"])) for c in commits), (key, run["commit"])
        cmd = shlex.split(str(run["command"]))
        if cmd[0] == "make":
            assert re.search(rf"^{re.escape(cmd[1])}:", makefile, flags=re.M), f"{key}: {run['command']}: no target"
            continue
        argv = ([sys.executable, "-m", "kwokbench", *cmd[1:3 if cmd[1] in GROUPS else 2]] if cmd[0] == "kwokbench"
                else [sys.executable, str(ROOT / cmd[1])] if cmd[0] == ".venv/bin/python" else [])
        assert argv, f"{key}: {run['command']}: neither kwokbench, a benchmark nor a make target"
        shown = _help(argv, example_env)
        unknown = [f for f in _flags(cmd) if not re.search(re.escape(f) + r"(?![\w-])", shown)]
        assert not unknown, f"{key}: {run['command']}: options {unknown} are not in its --help"


def test_a_figure_no_data_holds_fails_the_build() -> None:
    """The build renders figures strictly: a name the data lacks, a run it does not hold, or an unknown macro is an
    error that fails `mkdocs build` (mkdocs.yml: on_undefined strict, on_error_fail), never an empty cell."""
    import jinja2
    import yaml

    with pytest.raises(figures.FigureError, match=r"no stored figure 'ceilings\.nope'"):
        figures.render('{{ fig("ceilings.nope") }}')
    with pytest.raises(figures.FigureError, match="has no run 2001-01-01"):
        figures.render('{{ fig("ceilings.dra_100nodes@2001-01-01") }}')
    with pytest.raises(jinja2.UndefinedError):
        figures.render("{{ ceiling_of_today }}")
    macros = next(p["macros"] for p in yaml.safe_load((ROOT / "mkdocs.yml").read_text())["plugins"]
                  if isinstance(p, dict) and "macros" in p)
    assert macros["on_undefined"] == "strict" and macros["on_error_fail"] is True, macros
    one = next(iter(figures.figures().values()))
    several = next(f for f in figures.figures().values() if len(f.runs) > 1)
    assert figures.fig(one.key + "@" + str(one.runs[0].get("id", one.runs[0]["date"]))).startswith(
        one.text(float(one.runs[0]["value"])))
    assert f"median of {len(several.runs)} runs" in figures.fig(several.key)




def _bench_rows(variant: str, throughputs: list[float]) -> list[dict[str, object]]:
    return [{"variant": variant, "bound": 1000, "expected": 1000, "throughput": t, "ceiling": None, "p50": 0.5,
             "p99": 1.0 + i, "sched_ms": 2.0, "helpers_ms": None, "writes": 4.0, "apiserver_cpu": 5.0,
             "limited_by": "arrival", "seconds": 60.0, "started": f"2026-11-29T0{i}:00:00"}
            for i, t in enumerate(throughputs)]


def test_a_benchmark_table_is_rendered_from_its_stored_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A benchmark's stored runs render as the benchmark prints them (its own ``markdown``): medians, the range over
    the runs, the ratio to a stored ceiling; one median, a change of medians and the gate's paired decision are
    quoted from the same runs; data without its origin, or a variant it lacks, fails the build."""
    import json

    runs = {"kube-scheduler": _bench_rows("kube-scheduler", [100, 110, 120]),
            "yunikorn-tuned": _bench_rows("yunikorn-tuned", [150, 160, 170])}
    doc = {"what": "t", "command": ".venv/bin/python benchmarks/bench_batch.py --repeat 3", "commit": "abc",
           "date": "2026-11-29", "host": "h", "runs": runs}
    (tmp_path / "t.json").write_text(json.dumps(doc))
    (tmp_path / "bare.json").write_text(json.dumps({**doc, "commit": ""}))
    monkeypatch.setattr(figures, "DATA", tmp_path)
    figures.bench_data.cache_clear()
    try:
        assert figures.benchmarks() == ["bare", "t"]
        table = figures.render('{{ bench_table("t") }}').splitlines()
        assert table[0].startswith("| variant | throughput (3 runs) | × ceiling |") and len(table) == 4
        assert table[2] == ("| kube-scheduler | 110.0 pods/s (100.0–120.0) | – | 0.50 s / 2.00 s | 2.00 ms | – | "
                            "4.00 | 5.0 s | the arrivals |"), table[2]
        assert figures.bench_cell("t", "yunikorn-tuned", "throughput") == "160.0"
        assert figures.bench_change("t", "kube-scheduler", "yunikorn-tuned", "throughput") == "+45%"
        # paired by the order the runs started: 1.5, 1.45, 1.42 -> geometric mean +45.7%, every pair better
        assert figures.bench_gate("t", "kube-scheduler", "yunikorn-tuned", "throughput").startswith("+45.7% (90% CI +")
        assert figures.bench_gate("t", "kube-scheduler", "yunikorn-tuned", "throughput").endswith("3 pairs: better)")
        with pytest.raises(figures.FigureError, match="has no variant 'kai'"):
            figures.bench_cell("t", "kai", "throughput")
        with pytest.raises(figures.FigureError, match="missing commit"):
            figures.bench_table("bare")
        with pytest.raises(figures.FigureError, match="no stored benchmark data 'nope'"):
            figures.render('{{ bench_table("nope") }}')
    finally:
        figures.bench_data.cache_clear()


def test_the_verdicts_figures_are_the_stored_pairs_analysed() -> None:
    """docs/results/data/verdicts-*.json is what ``bench_verdicts.py --analyse … --data`` makes of the pairs in
    benchmarks/data: its spreads, minutes and decisions recomputed here from those files, and one error rate (2000
    seeded draws), agree; a figure the data lacks fails the page's build, never renders empty."""
    import math

    name = max(n for n in figures.benchmarks() if n.startswith("verdicts-"))
    doc = figures.bench_data(name)
    bv = figures._benchmark(name)
    files = sorted((ROOT / "benchmarks" / "data").glob("verdicts-*.json"))
    assert {bv._stem(str(f)) for f in files} == set(doc["runs"]), "a pairs file is not in the stored analysis"
    for f in files:
        pairs, row = json.loads(f.read_text()), doc["runs"][bv._stem(str(f))]
        assert row["origin"] == pairs["origin"] and row["pairs"] == len(pairs["pairs"])
        for fig in bv.FIGURES:
            assert math.isclose(row["sd"][fig], float(bv.log_ratios(pairs, fig).std(ddof=1)), rel_tol=1e-9)
        if "decided" in row:
            from kwokbench.compare.stats import decide_sequential, looks

            x = bv.log_ratios(pairs, "cpu_per_pod")
            got, n = decide_sequential(x, False, doc["allowed"], looks(3, max(3, len(x))))
            assert got is not None and (got.decision, n) == (row["decided"]["decision"], row["decided"]["pairs"])
            assert math.isclose(got.ratio, row["decided"]["ratio"], rel_tol=1e-9)
    duet = json.loads((ROOT / "benchmarks/data/verdicts-duet-noisy-0.json").read_text())
    again = bv.resampled(bv.log_ratios(duet, "cpu_per_pod"), 0.05, False, doc["allowed"], first=3, most=12)
    assert again == doc["runs"]["duet-noisy-0"]["errors"]["3-12"]["resampled"]["0.05"]
    with pytest.raises(figures.FigureError, match="reads what the data does not hold"):
        figures.bench(name, "value", "duet-noisy-0", "errors.3-99.resampled.0.regression")
    with pytest.raises(figures.FigureError, match="has no function 'nope'"):
        figures.bench(name, "nope")


def test_a_setting_is_quoted_from_the_code_or_the_scenario_that_holds_it() -> None:
    """A setting a page names (a test's level, a resampling factor, etcd's request limit) is not measured, and not
    typed either: ``code`` and ``scenario`` read it where it is set, so a change there changes the page; a name that
    is not there fails the build."""
    from kwokbench.compare.stats import ALPHA, looks
    from kwokbench.manifests import MAX_OBJECT_BYTES

    assert figures.code("kwokbench.compare.stats.ALPHA") == f"{ALPHA:g}"
    assert figures.code("kwokbench.manifests.MAX_OBJECT_BYTES", per=2**20) == f"{MAX_OBJECT_BYTES / 2**20:g}"
    assert figures.code("kwokbench.compare.stats.looks", 3, 12) == ", ".join(map(str, looks(3, 12)))
    inflate = yaml.safe_load((ROOT / "scenarios/alibaba-gpu-2023.yaml").read_text())["workloads"][0]["trace"]["inflate"]
    assert figures.scenario("scenarios/alibaba-gpu-2023.yaml", "workloads.0.trace.inflate") == f"{inflate:g}"
    with pytest.raises(figures.FigureError, match="no such setting in the code"):
        figures.code("kwokbench.compare.stats.NOPE")
    with pytest.raises(figures.FigureError, match=r"scenarios/quickstart\.yaml: no workloads\.7"):
        figures.scenario("scenarios/quickstart.yaml", "workloads.7.count")


def test_a_kept_bisect_and_its_stored_step_agree() -> None:
    """The known answers' steps are stored figures (known-answers.yaml, quoted on several pages) and kept bisects
    (docs/results/data/bisect-*.json, their tables): one quantity, so the two must read the same."""
    stored = {"async_api_step@2026-11-29": "bisect-async-api-calls-2026-11-29",
              "dra_claim_controller_step": "bisect-dra-claim-controller-2026-11-28",
              "dra_claim_controller_revert": "bisect-dra-claim-controller-revert-2026-11-28"}
    for key, kept in stored.items():
        result = figures.bench_data(kept)["bisect"]["result"]
        assert round((result["ratio"] - 1) * 100, 1) == figures.value(f"known-answers.{key}"), (key, result)
    with pytest.raises(figures.FigureError, match="reads what the data does not hold"):
        figures.bench("bisect-dra-claim-controller-2026-11-28", "extra_range", ["v9.99.9"], "extra_claims")


def test_no_page_types_a_stored_figure_by_hand() -> None:
    """A stored figure is quoted from its data everywhere in the manual (``{{ fig(...) }}``), never copied: a copy
    is how one ceiling came to read 55.4 pods/s on four pages and 86.0 on a fifth. (The README, which GitHub shows
    unrendered, quotes results pages beside a link to them, which the test above holds to those pages.)"""
    typed = {fig.text(float(run["value"])): fig.key for fig in figures.figures().values() for run in fig.runs
             if fig.check_copies}
    assert len(typed) > 30, "the check would see almost nothing"
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(t) for t in sorted(typed, key=len, reverse=True)) + ")")
    copies = [f"{p.relative_to(ROOT)}:{n}: {m.group(1)} is {typed[m.group(1)]}: quote it with {{{{ fig(...) }}}}"
              for p in sorted(DOCS.rglob("*.md")) if p.parent.name != "development"
              for n, line in enumerate(p.read_text().splitlines(), 1) for m in pattern.finditer(line)]
    assert not copies, "\n".join(copies)


def _prose(text: str) -> str:
    """A page's source less its front matter, code, and the macros that quote stored data."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"\{\{.*?\}\}|\{%.*?%\}", "", text, flags=re.S)
    return re.sub(r"`(?:[^`\n]|\n(?![ \t]*\n))*`", "", text)  # a code span may run over lines, not paragraphs


def typed_figures(text: str) -> list[str]:
    """The measured figures (numbers with a decimal point, whole ones that read as measured) a page's source types
    by hand: outside its front matter, code, and the macros that quote stored data."""
    return _measured(_prose(text))


def unbacked_figures(text: str) -> list[str]:
    """The typed figures no check holds to data: those of a paragraph, list item or table cell without a link to a
    results page (a figure beside one must stand on that page, which renders it from data:
    :func:`test_a_figure_quoted_beside_a_link_to_its_results_page_is_that_pages_figure`)."""
    return [n for quote in _quotes(_prose(text)) if not _RESULTS_LINK.search(quote) for n in _measured(quote)]


@pytest.mark.parametrize("page", sorted((DOCS / "results").glob("*.md")), ids=lambda p: p.name)
def test_results_pages_type_no_figure_by_hand(page: Path) -> None:
    """A results page quotes every measured figure from stored data (docs/results/data: a benchmark's ``--data``
    file or a figure's runs, through docs/figures.py), never types one: a typed figure is one no data backs, and the
    next run moves the data, not the page. What is not measured is written so that it is not counted: a Kubernetes
    release as ``v1.37``, a test's level as ``5%``; history without its figures."""
    typed = typed_figures(page.read_text())
    assert not typed, (f"{page.name} types {len(typed)} figures by hand: quote them from stored data "
                       f"(docs/figures.py), e.g. {typed[-3:]}")


@pytest.mark.parametrize("page", sorted([*(DOCS / "guides").rglob("*.md"), *(DOCS / "getting-started").glob("*.md")]),
                         ids=lambda p: str(p.relative_to(DOCS)))
def test_guides_type_no_figure_no_check_holds(page: Path) -> None:
    """A guide quotes a measured figure from stored data (docs/figures.py), or beside a link to the results page that
    renders it (which :func:`test_a_figure_quoted_beside_a_link_to_its_results_page_is_that_pages_figure` holds to
    that page), or from the code or scenario that sets it (``code``, ``scenario``): never typed alone, where the next
    run would leave it behind (237 were on 2026-11-30's morning; the last went that evening)."""
    typed = unbacked_figures(page.read_text())
    assert not typed, (f"{page.relative_to(DOCS)} types {len(typed)} figures by hand: quote them from stored data "
                       f"(docs/figures.py) or beside a link to their results page, e.g. {typed[-3:]}")


def test_the_count_of_typed_figures_finds_them_and_skips_quoted_ones() -> None:
    text = ("---\nrender_macros: true\n---\n| a | 176.9 pods/s | {{ over(176.9, x) }} |\n\n```bash\nx 1.5\n```\n"
            "v1.36.4, `3.2 s`, {{ fig(\"ceilings.a\") }} and 0.43 s, `an error after\n 0.1s` 5.5 s `a\n\n6.6 `b`\n")
    assert typed_figures(text) == ["176.9", "0.43", "5.5", "6.6"]


def test_whole_figures_that_read_as_measured_are_counted_and_settings_are_not() -> None:
    text = ("It took 3 min 22 s, about 30 s of it waiting, and ran in 28 s at 622 pods/s; within 10 ms.\n\n"
            "A session of 1 s, 100 nodes, 20 pods each, every 5 s, v1.36 in 2 s-steps, `in 9 s`.\n")
    assert typed_figures(text) == ["took 3 min 22 s", "about 30 s", "in 28 s", "622 pods/s", "within 10 ms"]


def test_a_figure_beside_a_link_to_a_results_page_is_backed_and_one_alone_is_not() -> None:
    text = ("Measured 12.5 s ([Results](../results/dra.md)).\n\n- a bullet of 3.3 s\n- and `4.4 s` in code\n\n"
            "| a | 7.1 pods/s | [page](results/index.md) 8.2 |\n")
    assert unbacked_figures(text) == ["3.3", "7.1"]


def test_one_name_for_each_skew_rule() -> None:
    """A scheduler's client-library skew is judged by two rules, each named one way: Kubernetes' skew policy (one minor)
    and kwokbench's limit (toolchain/versions.MAX_SKEW, stated where the guide defines it). "The skew policy" alone,
    or a third rule, is how three readings came to be quoted."""
    from kwokbench.toolchain.versions import MAX_SKEW

    loose = [f"{p.relative_to(ROOT)}:{n}" for p in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"(?<!Kubernetes' )skew policy|skew (kwokbench|it) allows", line)]
    assert not loose, f"name the rule (Kubernetes' skew policy, or kwokbench's limit): {loose}"
    guide = (DOCS / "guides" / "kubernetes-versions.md").read_text()
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    assert f"**kwokbench's\nlimit** runs a scheduler whose libraries are at most {words[MAX_SKEW]} minor" in guide
