"""Shared fixtures. e2e tests use a real kwokctl cluster in an isolated KWOKBENCH_HOME."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.traces import use_stand_in_without_the_real_trace

REPO = Path(__file__).resolve().parent.parent
use_stand_in_without_the_real_trace()  # before any test module reads the traces folder


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--keep-cluster", action="store_true", help="do not delete the e2e cluster at the end")
    parser.addoption("--times", metavar="PATH", default=None,
                     help="write every test's setup, call and teardown seconds to PATH as JSON (python -m "
                          "tests.support.times PATH prints them as the time table of docs/development/tests.md)")


_PHASES: dict[str, dict[str, float | str]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each phase's own duration: setup is where a test pays for the fixtures it is the first to use (a cluster,
    a build), so the table can tell a test's own cost from the shared cost it happened to carry."""
    row = _PHASES.setdefault(report.nodeid, {"setup": 0.0, "call": 0.0, "teardown": 0.0, "outcome": "passed"})
    row[report.when] = float(row[report.when]) + report.duration
    if report.outcome != "passed" and row["outcome"] == "passed":
        row["outcome"] = report.outcome


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A test of a file that needs a background build (:data:`tests.support.prebuild.NEEDS`) first waits for it, before
    its timeout starts (this wrapper runs outside pytest-timeout's): the build's time is not the test's.

    Under pytest-xdist, a test marked ``quiet_host`` runs with no other worker's test beside it: its claim is
    about where this host's CPU went (CI saw the arrival-bound case judged host-bound, 48% of the 2 CPUs taken by
    the other worker's cluster). Every other test holds a shared lock; a quiet one waits for the exclusive lock,
    and the turnstile keeps shared tests from starting meanwhile. One process: no lock."""
    from tests.support import prebuild

    builds = prebuild.NEEDS.get(_file(item.nodeid))
    if builds:
        waited = prebuild.wait_for(builds, item.config.rootpath / ".pytest_cache" / "prebuild.log")
        if waited >= 1:
            item.user_properties.append(("waited_for_builds_seconds", round(waited)))
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        yield
        return
    import fcntl

    # the workers' temporary folders share this run's parent (pytest keeps the last three runs' and removes older)
    base = item.config._tmp_path_factory.getbasetemp().parent / f"host-{run}"  # type: ignore[attr-defined]
    quiet = item.get_closest_marker("quiet_host") is not None
    with open(f"{base}.turnstile", "a") as gate, open(f"{base}.host", "a") as host:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(host, fcntl.LOCK_EX if quiet else fcntl.LOCK_SH)
        if not quiet:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(host, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The e2e marker; the files in the order they run (:func:`tests.support.prebuild.order`: those that need a build
    last, under pytest-xdist with ``--no-loadscope-reorder``); in one process, the background builds begun."""
    from tests.support import prebuild

    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)
    files = list(dict.fromkeys(_file(i.nodeid) for i in items))
    # under pytest-xdist the controller decides once for every worker (their orders must be the same)
    built = config.workerinput["kwokbench_built"] if hasattr(config, "workerinput") else _built(config.rootpath)
    place = {f: n for n, f in enumerate(prebuild.order(files, built=built))}
    items.sort(key=lambda i: place[_file(i.nodeid)])  # stable: a file's tests keep their order
    if not hasattr(config, "workerinput"):
        _start_builds(config, files)


@functools.cache
def _built(root: Path) -> bool:
    """Whether every background build is done (:func:`tests.support.prebuild.all_done`) as the session begins: read
    once, so that the header and every worker get the same answer."""
    from tests.support import prebuild

    log = root / ".pytest_cache" / "prebuild.log"
    return log.is_file() and prebuild.all_done(log, prebuild.needed(prebuild.NEEDS))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, before a worker starts: the order's choice, made once for all workers."""
    node.workerinput["kwokbench_built"] = _built(node.config.rootpath)


def pytest_report_header(config: pytest.Config) -> str:
    built = _built(config.rootpath)
    return ("file order: every background build done, the files that need one first, the short tiers last" if built
            else "file order: not every background build done, the files that need one last, by when it is ready")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """Under pytest-xdist the controller collects nothing: the background builds begin from a worker's list."""
    _start_builds(node.config, list(dict.fromkeys(map(_file, ids))))  # type: ignore[attr-defined]


_BUILDS: dict[str, object] = {}


def _start_builds(config: pytest.Config, files: list[str]) -> None:
    """The builds ``files`` need: those ``make test`` began before the linters (it runs this session), or begun
    now."""
    from tests.support import prebuild

    if "run" in _BUILDS:
        return
    names = prebuild.needed(files)
    folder = config.rootpath / ".pytest_cache"
    run = prebuild.adopt(folder, names) or prebuild.start(names, folder / "prebuild.log")
    _BUILDS.update(run=run, names=names)


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests.support import prebuild

    run = _BUILDS.get("run")
    if isinstance(run, prebuild.Running):
        _BUILDS["outcome"] = run.stop()
    path = session.config.getoption("--times")
    if path and not hasattr(session.config, "workerinput"):  # under pytest-xdist the controller gets every report
        import json

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps({"version": 1, "tests": _PHASES}, indent=1) + "\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line for the background builds: what each took (``cached`` when warm), and how they ended."""
    from tests.support import prebuild

    run = _BUILDS.get("run")
    if isinstance(run, prebuild.Running) and "outcome" in _BUILDS:
        begun = " begun by make test" if run.by_make else ""
        terminalreporter.write_line(f"background builds{begun}: {prebuild.summary(run.log)}; {_BUILDS['outcome']} "
                                    f"(log: {run.log})")


@pytest.fixture(scope="session")
def kb_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An isolated kwokbench state dir for the whole session (clusters, kubeconfig)."""
    home = tmp_path_factory.mktemp("kbhome")
    old = os.environ.get("KWOKBENCH_HOME")
    os.environ["KWOKBENCH_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("KWOKBENCH_HOME", None)
    else:
        os.environ["KWOKBENCH_HOME"] = old


def kwokbench(*args: str, env: dict[str, str] | None = None, timeout: float = 600,
              check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess (what a user types)."""
    res = subprocess.run([sys.executable, "-m", "kwokbench", *args], capture_output=True, text=True,
                         timeout=timeout, env={**os.environ, "COLUMNS": "200", **(env or {})},
                         stdin=subprocess.DEVNULL, cwd=REPO)
    if check and res.returncode != 0:
        raise AssertionError(f"kwokbench {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


def assert_one_line_error(res: subprocess.CompletedProcess[str], needle: str, code: int = 2) -> None:
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr + res.stdout
    assert needle in res.stderr, res.stderr


def alive(pid: int) -> bool:
    """Running and not a zombie; a process that exits while it is looked at is gone (CI: one went between
    psutil.pid_exists and psutil.Process)."""
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def postgres_bindir() -> Path | None:
    """The newest PostgreSQL server's binaries: Debian keeps them in /usr/lib/postgresql/<ver>/bin, off PATH."""
    import shutil

    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
                   if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


class Postgres:
    """A PostgreSQL server of the test session on 127.0.0.1, password login for ``kb``."""

    user, password = "kb", "secret"

    def __init__(self, port: int) -> None:
        self.port = port

    def url(self, db: str, password: str | None = None) -> str:
        return f"postgresql://{self.user}:{password or self.password}@127.0.0.1:{self.port}/{db}"

    def create_db(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A real PostgreSQL server for the session: initdb into a temporary folder, started on a free port
    (as the ``postgres`` user when the tests run as root: initdb refuses root), stopped and removed at the
    end. Skipped when the server's binaries are absent (``make system-deps`` installs them)."""
    import pwd
    import shutil
    import tempfile

    bindir = postgres_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found: `make system-deps` installs them")
    prefix: list[str] = []
    owner = None
    if os.geteuid() == 0:  # initdb refuses root: run the server as Debian's postgres user
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no postgres user to run initdb as")
        runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")  # root's tool, off
        if runuser is None:                                                                    # a bare PATH
            pytest.skip("running as root and no runuser (util-linux) to run initdb as the postgres user")
        prefix = [runuser, "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="kb-pg-"))
    pwfile = root / "pw"
    pwfile.write_text(Postgres.password + "\n")
    if owner:
        for p in (root, pwfile):
            os.chown(p, owner.pw_uid, owner.pw_gid)
    data, port = root / "data", free_port()
    try:
        subprocess.run([*prefix, str(bindir / "initdb"), "-D", str(data), "-U", Postgres.user,
                        f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                        "--no-sync"], check=True, capture_output=True, timeout=120)
        # fsync off: a test server, its data thrown away (the guarantees tested are about clients)
        opts = (f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c max_connections=60 "
                "-c shared_buffers=16MB")
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60",
                        "-o", opts, "start"], check=True, capture_output=True, timeout=90)
    except subprocess.CalledProcessError as e:
        shutil.rmtree(root, ignore_errors=True)
        raise AssertionError(f"PostgreSQL did not start: {e.stderr.decode(errors='replace')}") from e
    try:
        yield Postgres(port)
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)
