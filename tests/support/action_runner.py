"""``action.yml`` executed as a GitHub runner executes it, on this machine: each step in order, its ``if:``
and ``${{ … }}`` expressions evaluated, its ``run:`` script run by ``bash -e -o pipefail`` with the runner's
variables (GITHUB_ACTION_PATH, GITHUB_WORKSPACE, RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY), and its
``uses:`` steps replaced by their local equivalents: actions/checkout of another ref is a git worktree,
setup-python and setup-go are this machine's Python and Go, the cache steps are skipped (the toolchain cache is
this machine's). An expression this evaluator does not know fails the test, so a new construct in the action is
never silently passed over."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
SKIPPED_USES = ("actions/setup-python@", "actions/setup-go@", "actions/cache/restore@", "actions/cache/save@")


@dataclass
class ActionRun:
    """What a job shows: the exit code of the step that ended it, the log, the summary and the annotations."""

    code: int
    log: str
    summary: str
    steps: list[str] = field(default_factory=list)
    """The names of the steps run, in order."""

    @property
    def annotations(self) -> list[str]:
        return [line for line in self.log.splitlines() if re.match(r"::(error|warning|notice) ", line)]


class Evaluator:
    def __init__(self, inputs: dict[str, str], github: dict[str, Any]) -> None:
        self.inputs, self.github = inputs, github
        self.steps: dict[str, dict[str, str]] = {}

    def value(self, expr: str) -> str | bool:
        expr = expr.strip()
        for op, fn in (("&&", all), ("||", any)):
            if op in expr:
                return fn(bool(self.value(part)) for part in expr.split(op))
        for op in ("!=", "=="):
            if op in expr:
                left, right = (self.value(x) for x in expr.split(op, 1))
                return (left != right) if op == "!=" else (left == right)
        if m := re.fullmatch(r"'([^']*)'", expr):
            return m.group(1)
        if m := re.fullmatch(r"inputs\.([\w-]+)", expr):
            return self.inputs[m.group(1)]
        if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
            return self.steps.get(m.group(1), {}).get(m.group(2), "")
        if m := re.fullmatch(r"github\.([\w.]+)", expr):
            cur: Any = self.github
            for k in m.group(1).split("."):
                cur = cur.get(k, "") if isinstance(cur, dict) else ""
            return str(cur)
        raise AssertionError(f"action.yml: an expression the local runner does not evaluate: {expr!r}")

    def text(self, s: str) -> str:
        return EXPR.sub(lambda m: str(self.value(m.group(1))), s)

    def condition(self, s: str | None) -> bool:
        if s is None:
            return True
        return bool(self.value(EXPR.sub(lambda m: m.group(1), s)))


def run_action(workspace: Path, runner_temp: Path, with_: dict[str, str], base_sha: str | None,
               timeout: float = 1800, only: set[str] | None = None) -> ActionRun:
    """Run action.yml in ``workspace`` (the caller's checkout of its head) as a pull request against
    ``base_sha``, or as a push when it is None; ``only``: just the steps of these names (a job re-run from a
    later step, on what the earlier ones left in the workspace and runner temp)."""
    action = yaml.safe_load((REPO / "action.yml").read_text())
    github = {"event": {"pull_request": {"base": {"sha": base_sha}}} if base_sha else {}}
    ev = Evaluator({}, github)
    ev.inputs = {name: ev.text(str(spec.get("default", ""))) for name, spec in action["inputs"].items()}
    unknown = set(with_) - set(ev.inputs)
    assert not unknown, f"inputs action.yml does not declare: {unknown}"
    ev.inputs.update(with_)
    runner_temp.mkdir(parents=True, exist_ok=True)
    summary = runner_temp / "step_summary.md"
    summary.write_text("")  # a new job's summary
    # setup-python puts a `python` of the asked version first on PATH
    shims = runner_temp / "shims"
    shims.mkdir(exist_ok=True)
    if not (shims / "python").exists():
        (shims / "python").symlink_to(getattr(sys, "_base_executable", sys.executable))
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}", "GITHUB_ACTIONS": "true",
           "GITHUB_ACTION_PATH": str(REPO), "GITHUB_WORKSPACE": str(workspace), "RUNNER_TEMP": str(runner_temp),
           "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64", "GITHUB_STEP_SUMMARY": str(summary), "CI": "true"}
    env.pop("VIRTUAL_ENV", None)
    # a GitHub runner writes bytecode: the action's venv, installed without compiling, compiles what it imports
    # on first use (this sandbox's PYTHONDONTWRITEBYTECODE would recompile it in every command and child)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    log: list[str] = []
    names: list[str] = []
    for i, step in enumerate(action["runs"]["steps"]):
        name = step.get("name") or step.get("uses", "")
        if not ev.condition(step.get("if")):
            continue
        uses = step.get("uses", "")
        if uses.startswith(SKIPPED_USES) or (only is not None and name not in only):
            continue
        names.append(name)
        if uses.startswith("actions/checkout@"):
            params = {k: ev.text(str(v)) for k, v in step.get("with", {}).items()}
            res = subprocess.run(["git", "worktree", "add", "--detach", "--force", params["path"], params["ref"]],
                                 cwd=workspace, capture_output=True, text=True, timeout=120)
            log.append(res.stdout + res.stderr)
            if res.returncode:
                return ActionRun(res.returncode, "".join(log), summary.read_text(), names)
            continue
        assert uses == "", f"action.yml step {name!r}: no local equivalent for {uses}"
        assert step.get("shell") == "bash", f"action.yml step {name!r}: a composite step must name its shell"
        out = runner_temp / f"output-{i}"
        out.write_text("")
        step_env = {**env, "GITHUB_OUTPUT": str(out),
                    **{k: ev.text(str(v)) for k, v in (step.get("env") or {}).items()}}
        script = runner_temp / f"step-{i}.sh"
        script.write_text(ev.text(step["run"]))
        res = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", str(script)], cwd=workspace,
                             env=step_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=timeout, stdin=subprocess.DEVNULL)
        log.append(f"##[step] {name}\n{res.stdout}")
        if "id" in step:
            ev.steps[step["id"]] = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
        if res.returncode:
            return ActionRun(res.returncode, "".join(log), summary.read_text(), names)
    return ActionRun(0, "".join(log), summary.read_text(), names)
