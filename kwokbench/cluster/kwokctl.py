"""Drive ``kwokctl --runtime binary`` in a workdir that kwokbench owns.

kwokbench never touches the user's ``~/.kwok`` or ``~/.kube/config``: kwokctl runs with
``KWOK_WORKDIR=$KWOKBENCH_HOME/kwok``, a generated ``-c`` config and
``--kubeconfig $KWOKBENCH_HOME/kubeconfig``. Every cluster in that workdir is kwokbench's, which
is what makes ``down --all`` safe.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

from kwokbench import flags
from kwokbench.cluster import kwok_controllers, processes
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.cluster.objects import yaml_documents
from kwokbench.cluster.processes import ComponentProcess
from kwokbench.errors import ClusterError, ScenarioError, ToolchainError
from kwokbench.progress import Reporter, Silent
from kwokbench.toolchain import Toolchain

NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")
STOP_GRACE_SECONDS = 15
"""How long a component restarted by a chaos event is given to stop after SIGTERM before it is sent SIGKILL."""
UNLIMITED_QPS, UNLIMITED_BURST = 5000, 10000  # what kwokctl --disable-qps-limits sets


def home_dir() -> Path:
    return Path(os.environ.get("KWOKBENCH_HOME", "~/.local/state/kwokbench")).expanduser()


@dataclass
class ClusterOptions:
    name: str = "kwokbench"
    qps_limits: bool = False
    """Keep the components' default client QPS limits and apiserver APF (False = kwokctl --disable-qps-limits)."""
    scheduler_config: Path | None = None
    scheduler_binary: Path | None = None
    scheduler_client_qps: float | None = None
    """Overrides the scheduler's client QPS (default: unlimited without qps_limits, else its own 50)."""
    scheduler_client_burst: int | None = None
    scheduler_extenders: list[dict[str, Any]] = field(default_factory=list)
    """Entries appended to the configuration's ``extenders:`` (KubeSchedulerConfiguration v1 Extender)."""
    scheduler_plugin_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Plugin name → args merged into that plugin's ``pluginConfig`` in every profile (e.g. the Wasm host
    plugin's ``guestURL``, known only once the guest is built)."""
    crds: list[Path] = field(default_factory=list)
    """CRD manifests installed before nodes are created; the components are then restarted, because a
    scheduler plugin's informer does not pick up a kind that did not exist when it started."""
    apiserver_port: int | None = None
    prometheus_port: int | None = None
    extra_args: list[str] = field(default_factory=list)
    """Components' flags, ``component=key=value`` (:mod:`kwokbench.flags`); a variant's kube-scheduler flags too."""
    feature_gates: dict[str, bool] = field(default_factory=dict)
    """Feature gates of kube-apiserver, kube-controller-manager and kube-scheduler (kwokctl's kubeFeatureGates)."""
    runtime_config: list[str] = field(default_factory=list)
    """kube-apiserver ``--runtime-config`` entries, e.g. ``scheduling.k8s.io/v1beta1=true``."""
    disable: list[str] = field(default_factory=list)
    """Components not to run (kwokctl ``--disable``), e.g. kube-scheduler to measure creation alone."""
    wait_seconds: int = 180
    gogc: int | None = 400
    """GOGC of apiserver and etcd: memory is plentiful here, CPU (2 cores) is not; None keeps Go's 100."""
    kwok_parallelism: int = 64
    """Workers of the kwok controller per stage kind (its default, 4, makes 5000 nodes take >1 min)."""
    kwok_stages: list[dict[str, Any]] = field(default_factory=list)
    """kwok Stage objects replacing kwokctl's defaults (e.g. without the pod stages); empty: its defaults."""
    node_lease_seconds: int | None = None
    """kwok's node lease duration (kwokctl ``nodeLeaseDurationSeconds``); None: kwokctl's default."""
    pin_scheduler: bool = False
    """After start: kube-scheduler on CPU 0, the other components on the remaining CPUs."""
    kwok_configs: list[Path] = field(default_factory=list)
    """More kwok configuration files (e.g. a Stage completing Job pods after a delay), given with ``--config``."""
    kwok_controllers: int = 1
    """kwok controllers sharing the fake nodes by partition label (:mod:`kwokbench.cluster.kwok_controllers`);
    kwokctl's own is partition 0, the others are started by :meth:`Kwokctl.start_kwok_controllers`."""


@dataclass(frozen=True)
class ClusterInfo:
    name: str
    dir: Path
    kubeconfig: Path
    apiserver_port: int
    scheduler_port: int
    controller_manager_port: int
    kwok_controller_port: int
    prometheus_port: int | None

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    def credentials(self) -> Credentials:
        return Credentials(self.server, self.pki / "ca.crt", self.pki / "admin.crt", self.pki / "admin.key")

    def metrics_endpoints(self) -> dict[str, str]:
        return {
            "kube-apiserver": f"{self.server}/metrics",
            "kube-scheduler": f"https://127.0.0.1:{self.scheduler_port}/metrics",
            "kube-controller-manager": f"https://127.0.0.1:{self.controller_manager_port}/metrics",
            "kwok-controller": f"http://127.0.0.1:{self.kwok_controller_port}/metrics",
            **kwok_controllers.endpoints(self.dir),
        }


def free_port() -> int:
    return free_ports(1)[0]


PORT_RANGE = range(20000, 30000)
"""Where the components' ports are picked: below Linux's ephemeral range (32768–60999 unless the host changed
``ip_local_port_range``), from which every outgoing connection takes its local port and a ``bind`` to port 0 its
port, and below kwokctl's own picks (downward from 32767)."""

PORT_CURSOR = Path(tempfile.gettempdir()) / "kwokbench-ports"
"""The last port handed out, shared by every kwokbench process on the machine (locked while read and written)."""


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports nothing listens on, the next ones of :data:`PORT_RANGE` after the last handed out by any
    kwokbench on the machine (round-robin). Between the pick and the component's bind the port is free: a port the
    kernel hands out for port 0, from the ephemeral range, can meanwhile become an outgoing connection's or, picked
    the same way, another cluster's starting at that moment (a duet's, a parallel test's); then one component
    cannot listen and exits. Handed out in turn, a port comes round again only after the range's 10,000."""
    import fcntl

    try:
        cursor = PORT_CURSOR.open("a+")
    except OSError:
        cursor = None  # an unwritable temp folder: this process's own turn only
    try:
        if cursor is not None:
            fcntl.flock(cursor, fcntl.LOCK_EX)
            cursor.seek(0)
        text = cursor.read().strip() if cursor is not None else ""
        last = int(text) if text.isdigit() else _LAST_PORT[0]
        picked: list[int] = []
        port = last
        for _ in range(len(PORT_RANGE)):
            port = port + 1 if port + 1 in PORT_RANGE else PORT_RANGE.start
            if not port_in_use(port, reuse=False):
                picked.append(port)
                if len(picked) == n:
                    break
        else:
            raise ClusterError(f"fewer than {n} free ports in {PORT_RANGE.start}-{PORT_RANGE.stop - 1} on this machine")
        _LAST_PORT[0] = port
        if cursor is not None:
            cursor.seek(0)
            cursor.truncate()
            cursor.write(str(port))
            cursor.flush()
        return picked
    finally:
        if cursor is not None:
            cursor.close()  # and with it the lock


_LAST_PORT = [PORT_RANGE.start + os.getpid() % len(PORT_RANGE)]


def copy_logs(cluster_dir: Path, dest: Path) -> list[Path]:
    """Copy the cluster's component logs (``logs/*.log``) into ``dest``; the copies made (none if there were no
    logs or they could not be copied)."""
    logs = sorted(cluster_dir.glob("logs/*.log"))
    if not logs:
        return []
    try:
        dest.mkdir(parents=True, exist_ok=True)
        return [Path(shutil.copyfile(f, dest / f.name)) for f in logs]
    except OSError:
        return []


def port_in_use(port: int, reuse: bool = True) -> bool:
    """Something holds ``port`` (a listener; without ``reuse`` also a connection lingering on it)."""
    with socket.socket() as s:
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def validate_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise ClusterError(f"invalid cluster name {name!r}: use lower-case letters, digits and '-' (max 40)")
    return name


STOCK_SCHEDULER_QPS, STOCK_SCHEDULER_BURST = 50.0, 100
"""kube-scheduler's own client limits when its configuration sets no ``clientConnection.qps/burst``."""


def scheduler_config_document(opts: ClusterOptions) -> dict[str, Any]:
    """The KubeSchedulerConfiguration kwokctl gets (always one: flags are ignored once there is a file).

    The scenario's file (checked) or kube-scheduler's defaults, with client QPS/burst unlimited unless
    limits are kept (or as the variant sets them), the variant's extenders appended, and leader election
    off unless the file asks for it: one scheduler per cluster needs none, and a restarted scheduler
    would otherwise wait ~15 s for the lease of its killed predecessor. kube-scheduler ignores
    ``--kube-api-qps`` once ``--config`` is given, so kwokctl's ``--disable-qps-limits`` alone would
    silently leave a configured scheduler at 50 QPS. This document is the one source of the scheduler's
    effective client limits (:func:`scheduler_client_limits`): the fairness manifest reads them from it.
    """
    doc: Any = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    src = opts.scheduler_config
    if src is not None:
        try:
            doc = yaml.safe_load(src.read_text())
        except OSError as e:
            raise ScenarioError(f"scheduler config {src}: {e.strerror}") from e
        except yaml.YAMLError as e:
            raise ScenarioError(f"scheduler config {src} is not valid YAML: {e}") from e
        if not isinstance(doc, dict) or doc.get("kind") != "KubeSchedulerConfiguration":
            raise ScenarioError(f"scheduler config {src}: expected kind KubeSchedulerConfiguration")
        if not str(doc.get("apiVersion", "")).startswith("kubescheduler.config.k8s.io/"):
            raise ScenarioError(f"scheduler config {src}: expected apiVersion kubescheduler.config.k8s.io/v1")
    return with_client_limits(doc, opts)


def with_client_limits(doc: dict[str, Any], opts: ClusterOptions) -> dict[str, Any]:
    """``doc`` (a parsed KubeSchedulerConfiguration, not modified) as kwokbench hands it to kube-scheduler."""
    doc = {**doc, "leaderElection": {"leaderElect": False, **(doc.get("leaderElection") or {})}}
    cc = dict(doc.get("clientConnection") or {})
    if not opts.qps_limits:
        cc.setdefault("qps", UNLIMITED_QPS)
        cc.setdefault("burst", UNLIMITED_BURST)
    if opts.scheduler_client_qps:
        cc["qps"] = opts.scheduler_client_qps
        cc["burst"] = opts.scheduler_client_burst or max(int(opts.scheduler_client_qps), 1)
    elif opts.scheduler_client_burst:
        cc["burst"] = opts.scheduler_client_burst
    if cc:
        doc["clientConnection"] = cc
    else:
        doc.pop("clientConnection", None)
    if opts.scheduler_extenders:
        doc["extenders"] = [*(doc.get("extenders") or []), *opts.scheduler_extenders]
    if opts.scheduler_plugin_args:
        doc["profiles"] = [_with_plugin_args(p, opts.scheduler_plugin_args)
                           for p in doc.get("profiles") or [{"schedulerName": "default-scheduler"}]]
    return doc


def _with_plugin_args(profile: dict[str, Any], args: dict[str, dict[str, Any]]) -> dict[str, Any]:
    configs = [dict(c) for c in profile.get("pluginConfig") or []]
    for name, extra in args.items():
        entry = next((c for c in configs if c.get("name") == name), None)
        if entry is None:
            configs.append({"name": name, "args": dict(extra)})
        else:
            entry["args"] = {**(entry.get("args") or {}), **extra}
    return {**profile, "pluginConfig": configs}


def scheduler_client_limits(doc: dict[str, Any]) -> tuple[float, int]:
    """(QPS, burst) of kube-scheduler's API client under configuration ``doc``: its
    ``clientConnection.qps/burst``, or kube-scheduler's defaults (50, 100) where they are absent or 0
    (its defaulting treats 0 as unset)."""
    cc = doc.get("clientConnection") or {}
    qps, burst = cc.get("qps"), cc.get("burst")
    return float(qps) if qps else STOCK_SCHEDULER_QPS, int(burst) if burst else STOCK_SCHEDULER_BURST


def scheduler_config(opts: ClusterOptions, dst: Path) -> Path:
    """Write :func:`scheduler_config_document` to ``dst``."""
    doc = scheduler_config_document(opts)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(yaml.safe_dump(doc, sort_keys=False))
    return dst


class Kwokctl:
    def __init__(self, toolchain: Toolchain | None = None, home: Path | None = None) -> None:
        self.toolchain = toolchain or Toolchain()
        self.home = home or home_dir()
        self.workdir = self.home / "kwok"
        self.kubeconfig = self.home / "kubeconfig"
        """kwokctl adds a context per cluster here (never to ~/.kube/config)."""

    def for_kubernetes(self, kubernetes: str) -> Kwokctl:
        """This kwokctl (same home, same cache) bringing up clusters of another Kubernetes release."""
        if kubernetes == self.toolchain.kubernetes:
            return self
        return Kwokctl(self.toolchain.for_kubernetes(kubernetes), self.home)

    # -- plumbing --

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["KWOK_WORKDIR"] = str(self.workdir)
        # kubectl is looked up on PATH first: put ours in front so an old system kubectl is not used
        kubectl_dir = str(self.toolchain.path("kubectl").parent)
        env["PATH"] = kubectl_dir + os.pathsep + env.get("PATH", "")
        return env

    def _run(self, args: list[str], timeout: float, what: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.toolchain.path("kwokctl")), *args]
        try:
            res = subprocess.run(cmd, env=self._env(), capture_output=True, text=True, timeout=timeout,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise ClusterError(f"{what}: kwokctl did not finish within {timeout:.0f}s") from e
        except OSError as e:
            raise ClusterError(f"{what}: cannot run kwokctl ({e}); run `kwokbench tools install`") from e
        if res.returncode != 0:
            raise ClusterError(f"{what} failed: {_last_error(res.stderr or res.stdout)}")
        return res

    def cluster_dir(self, name: str) -> Path:
        return self.workdir / "clusters" / name

    def names(self) -> list[str]:
        d = self.workdir / "clusters"
        return sorted(p.name for p in d.iterdir() if p.is_dir()) if d.exists() else []

    def exists(self, name: str) -> bool:
        return (self.cluster_dir(name) / "kwok.yaml").exists()

    # -- lifecycle --

    def create(self, opts: ClusterOptions, reporter: Reporter | None = None,
               keep_logs: Path | None = None) -> ClusterInfo:
        """Create the cluster; one that fails to come up is deleted with its logs kept (:meth:`abandon`)."""
        rep = reporter or Silent()
        name = validate_name(opts.name)
        if self.exists(name):
            raise ClusterError(f"cluster {name!r} already exists (use another --name, or `kwokbench down {name}`)")
        if opts.apiserver_port and port_in_use(opts.apiserver_port):
            raise ClusterError(f"apiserver port {opts.apiserver_port} is already in use on this machine")
        if opts.prometheus_port and port_in_use(opts.prometheus_port):
            raise ClusterError(f"prometheus port {opts.prometheus_port} is already in use on this machine")
        if opts.prometheus_port and not shutil.which("prometheus"):
            raise ToolchainError("--prometheus needs a prometheus binary on PATH (Debian: apt-get install prometheus)")

        keys = ["kubeApiserverPort", "kubeSchedulerPort", "kubeControllerManagerPort", "kwokControllerPort",
                "etcdPort", "etcdPeerPort"]
        ports = dict(zip(keys, free_ports(len(keys)), strict=True))
        if opts.apiserver_port:
            ports["kubeApiserverPort"] = opts.apiserver_port
        cfg_dir = self.home / "configs"
        cfg_dir.mkdir(parents=True, exist_ok=True)
        cfg = cfg_dir / f"{name}.kwokctl.yaml"
        # Debian's prometheus defaults to one shared /var/lib/prometheus: give each cluster its own TSDB
        tsdb = [f"prometheus=storage.tsdb.path={self.cluster_dir(name) / 'prometheus-data'}"] \
            if opts.prometheus_port else []
        cfg.write_text(yaml.safe_dump_all(kwokctl_documents(self.toolchain.kwokctl_options(), opts, ports, tsdb)))
        args = ["-c", str(cfg), "--name", name, "create", "cluster", "--runtime", "binary",
                "--kubeconfig", str(self.kubeconfig), "--wait", f"{opts.wait_seconds}s", "--quiet-pull"]
        sc = scheduler_config(opts, cfg_dir / f"{name}.scheduler.yaml")
        args += ["--kube-scheduler-config", str(sc)]
        if opts.scheduler_binary:
            args += ["--kube-scheduler-binary", str(opts.scheduler_binary)]
        for comp in opts.disable:
            args += ["--disable", comp]
        try:
            parts = [c for c in ("etcd", "kube-apiserver", "controller-manager", "scheduler", "kwok")
                     if not ({c, f"kube-{c}"} & set(opts.disable))]
            with rep.status(f"starting cluster {name} ({', '.join(parts)})"):
                self._run(args, timeout=opts.wait_seconds + 120, what=f"creating cluster {name}")
            return self.info(name)
        except ClusterError as e:
            e.args = (f"{e}{self.abandon(name, keep_logs, rep)}",)
            raise
        except BaseException:
            # never leave a half-created cluster (or its processes) behind
            with contextlib.suppress(Exception):
                self.delete(name, missing_ok=True)
            raise

    def abandon(self, name: str, keep_logs: Path | None = None, reporter: Reporter | None = None) -> str:
        """Delete a cluster that failed to come up, its component logs kept first (in ``keep_logs``, else
        ``<home>/failed/<name>-<UTC time>/``): the error that names a component's log must not point into a
        folder the delete removes. Returns what to add to that error: each component that had already stopped,
        with the line of its log that says why, and where the logs are now (never raises)."""
        d = self.cluster_dir(name)
        stopped = self.stopped(name)
        dest = keep_logs or self.home / "failed" / f"{name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        kept = copy_logs(d, dest)
        with contextlib.suppress(Exception):
            self.delete(name, reporter, missing_ok=True)
        return "".join(f"; {s}" for s in [*stopped, *([f"its component logs are kept in {dest}"] if kept else [])])

    def restart_component(self, info: ClusterInfo, component: str, down_seconds: float = 0.0,
                          ready_timeout: float = 120,
                          while_down: Callable[[list[str]], dict[str, Any]] | None = None) -> dict[str, Any]:
        """Stop one component and start it again; kwokctl v0.8.0 can only stop and start a whole cluster.

        The process's own command line, working directory and environment are reused, its output is
        appended to kwokctl's log file and the new pid goes into kwokctl's pid file (so ``down`` still
        finds it). The old process is checked to still be that component before it is signalled
        (SIGTERM, SIGKILL after :data:`STOP_GRACE_SECONDS`). Waits ``down_seconds`` in between, then until ``/healthz``
        answers; returns when each step happened (epoch seconds; ``ready`` None if it never did). ``while_down``
        is called with the stopped process's command line once it is down (what it returns joins the record); the
        component is started again whatever it raises."""
        cluster_dir = self.cluster_dir(info.name)
        known, why = processes.from_pid_file(cluster_dir, component)
        old = known.process(cluster_dir)[0] if known else None
        if old is None:
            raise ClusterError(f"cannot restart {component}: {why or 'its process is not running'}")
        try:
            cmd, cwd, env = old.cmdline(), old.cwd(), old.environ()
        except psutil.Error as e:
            raise ClusterError(f"cannot restart {component}: its process is not running ({e})") from e
        old.terminate()
        try:
            old.wait(STOP_GRACE_SECONDS)
        except psutil.TimeoutExpired:
            old.kill()
            old.wait(10)
        stopped = time.time()
        done: dict[str, Any] = {}
        try:
            if while_down is not None:
                done = while_down(cmd)
            time.sleep(max(0.0, stopped + down_seconds - time.time()))
        finally:
            new = processes.spawn(cluster_dir, component, cmd, cwd, env)
        started = time.time()
        port = {"kube-scheduler": info.scheduler_port, "kube-apiserver": info.apiserver_port,
                "kube-controller-manager": info.controller_manager_port}[component]
        ready = _wait_healthy(port, info, ready_timeout)
        return {"component": component, "old_pid": old.pid, "new_pid": new.pid, "stopped": stopped,
                "started": started, "ready": ready, **done}

    def start_kwok_controllers(self, info: ClusterInfo, k: int) -> list[dict[str, Any]]:
        """Start partitions 1…k-1 of the fake nodes' kwok controllers (kwokctl's own is partition 0) with its
        command line, working directory and environment, each on a free port; returns their records."""
        if k <= 1:
            return []
        known, why = processes.from_pid_file(info.dir, kwok_controllers.COMPONENT)
        base = known.process(info.dir)[0] if known else None
        if base is None:
            raise ClusterError(f"cannot start {k - 1} more kwok controllers: kwokctl's "
                               f"{why or 'kwok controller is not running'}")
        try:
            cmd, cwd, env = base.cmdline(), base.cwd(), base.environ()
        except psutil.Error as e:
            raise ClusterError(f"cannot start {k - 1} more kwok controllers: kwokctl's is gone ({e})") from e
        launches = kwok_controllers.plan(cmd, k, free_ports(k - 1))
        return kwok_controllers.start(launches, info.dir, cwd, env)

    def delete(self, name: str, reporter: Reporter | None = None, missing_ok: bool = False) -> list[int]:
        """Delete the cluster and make sure none of its processes survive; returns the pids it had.

        A kwokctl still working on the cluster (a ``create`` whose kwokbench was killed) is stopped
        first, or it would start components after the delete. Only processes that are this cluster's
        components are signalled (:mod:`kwokbench.cluster.processes`): a pid file naming another process
        is reported and left alone. ``missing_ok``: a cluster whose directory kwokctl never got to write
        is not an error (the watchdog deletes whatever a killed run got to create)."""
        rep = reporter or Silent()
        d = self.cluster_dir(name)
        running = processes.kwokctl_commands(self.workdir, name)
        if running:
            rep.info(f"stopping kwokctl still working on {name} (pid {', '.join(str(p.pid) for p in running)})")
            processes.kill_now(running)
        if not d.exists():
            if missing_ok:
                return []
            raise ClusterError(f"no kwokbench cluster named {name!r} (known: {', '.join(self.names()) or 'none'})")
        known, notes = processes.from_pid_files(d)
        had = [*known.values(), *processes.strays(d, (c.pid for c in known.values()))]
        scratch = processes.scratch_of(d)  # kwokctl's delete removes the directory listing them
        with rep.status(f"deleting cluster {name}"):
            try:
                self._run(["--name", name, "delete", "cluster", "--kubeconfig", str(self.kubeconfig)], timeout=120,
                          what=f"deleting cluster {name}")
            finally:
                late = processes.strays(d, (c.pid for c in had))  # started while kwokctl deleted, if any
                notes += _kill_survivors([*had, *late], d)
                processes.remove_scratch(scratch)
                if d.exists():
                    shutil.rmtree(d, ignore_errors=True)
                for note in notes:
                    rep.warn(note)
        return [c.pid for c in had]

    # -- inspection --

    def stopped(self, name: str) -> list[str]:
        """Each component of the cluster whose process has stopped (its pid file names no running process), as
        "<component> had stopped (<the line of its log that says why>)"."""
        d = self.cluster_dir(name)
        return [f"{f.stem} had stopped ({processes.telling_line(d / 'logs' / f'{f.stem}.log')})"
                for f in sorted(d.glob("pids/*.pid")) if processes.from_pid_file(d, f.stem)[0] is None]

    def info(self, name: str) -> ClusterInfo:
        d = self.cluster_dir(name)
        try:
            docs = yaml_documents(d / "kwok.yaml")  # libyaml: 7 ms instead of 67 for 100 nodes' 27 kB
        except OSError as e:
            raise ClusterError(f"no kwokbench cluster named {name!r}") from e
        opts: dict[str, Any] = next((doc.get("options", {}) for doc in docs
                                     if doc and doc.get("kind") == "KwokctlConfiguration"), {})
        return ClusterInfo(
            name=name, dir=d, kubeconfig=d / "kubeconfig.yaml",
            apiserver_port=int(opts.get("kubeApiserverPort", 0)),
            scheduler_port=int(opts.get("kubeSchedulerPort", 0)),
            controller_manager_port=int(opts.get("kubeControllerManagerPort", 0)),
            kwok_controller_port=int(opts.get("kwokControllerPort", 0)),
            prometheus_port=int(opts["prometheusPort"]) if opts.get("prometheusPort") else None,
        )

    def pids(self, name: str) -> dict[str, int]:
        """Component → pid of the running processes: kwokctl's pid files, each pid checked to be that
        component of this cluster (a stale pid reused by another process is not listed)."""
        return {c: p.pid for c, p in self.processes(name).items()}

    def processes(self, name: str) -> dict[str, ComponentProcess]:
        """Component → its running process (pid and start time), from kwokctl's pid files, checked."""
        return processes.from_pid_files(self.cluster_dir(name))[0]

    def components(self, name: str) -> dict[str, str]:
        res = self._run(["--name", name, "get", "components", "-o", "wide"], timeout=60,
                        what=f"reading components of {name}")
        status: dict[str, str] = {}
        for line in res.stdout.splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 2:
                status[parts[0]] = parts[1]
        return status


def kwokctl_documents(toolchain_options: dict[str, object], opts: ClusterOptions,
                      ports: dict[str, int], more_flags: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The ``-c`` config: toolchain binaries, pinned ports, QPS limits, kwok controller parallelism, and every
    component's flags as ``componentsPatches`` (kwokbench's defaults, the scenario's ``extra_args``, then
    ``more_flags``; never kwokctl's ``--extra-args``: :func:`kwokbench.flags.patches`)."""
    options = {**toolchain_options, **ports, "disableQPSLimits": not opts.qps_limits}
    if opts.prometheus_port:
        options["prometheusPort"] = opts.prometheus_port
    if opts.node_lease_seconds:
        options["nodeLeaseDurationSeconds"] = opts.node_lease_seconds
    if opts.feature_gates:
        options["kubeFeatureGates"] = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(opts.feature_gates.items()))
    if opts.runtime_config:
        options["kubeRuntimeConfig"] = ",".join(opts.runtime_config)
    par = opts.kwok_parallelism
    patches: list[dict[str, Any]] = [{"name": c, "extraEnvs": [{"name": "GOGC", "value": str(opts.gogc)}]}
                                     for c in ("kube-apiserver", "etcd")] if opts.gogc else []
    kwok_configs = [f"kwok-controller=config={p}" for p in opts.kwok_configs]
    # kwokctl's controller is partition 0 (ANDed with its annotation selector)
    partition = [f"{kwok_controllers.COMPONENT}=manage-nodes-with-label-selector={kwok_controllers.selector(0)}"] \
        if opts.kwok_controllers > 1 else []
    patches += flags.patches([*_default_extra_args(), *opts.extra_args, *kwok_configs, *partition, *more_flags])
    return [*opts.kwok_stages,
        {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokctlConfiguration", "options": options,
         "componentsPatches": patches},
        {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
         "options": {"nodePlayStageParallelism": par, "podPlayStageParallelism": par, "nodeLeaseParallelism": par}},
    ]


KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


def _default_extra_args() -> list[str]:
    # A benchmark cluster is disposable: etcd need not fsync every write to survive a power cut,
    # and fsync latency on a shared disk would otherwise be measured as scheduler latency.
    # One controller-manager per cluster needs no leader election (and a restart would wait for the lease).
    # kwokctl's binary runtime makes the kwok controller manage *every* node; kwokbench's nodes carry
    # kwok's annotation, so select on it: a node without it (a chaos event, a real node) is left alone.
    # The scheduler and controller-manager authenticate no client here (no delegated authn), so pprof is
    # readable only as an always-allowed path, like /metrics (``run --profile``).
    # The apiserver's TaintNodesByCondition admission taints every new node not-ready; the controller-
    # manager lifts those taints at ~100 nodes/s, so 45 s after 5000 nodes report Ready 4390 still carried
    # it and a run scheduled onto a mostly tainted cluster while 5000 node updates streamed into the
    # scheduler (half its CPU per pod). kwok makes nodes Ready at once, and the controller-manager still
    # taints a node whose Ready condition turns False (chaos), so nothing is lost by not tainting at birth.
    allow = "authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof,/debug/pprof/*"
    return ["etcd=unsafe-no-fsync=true", "kube-controller-manager=leader-elect=false",
            "kube-apiserver=disable-admission-plugins=TaintNodesByCondition",
            "kwok-controller=manage-all-nodes=false",
            f"kwok-controller=manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
            f"kube-scheduler={allow}", f"kube-controller-manager={allow}"]


def _kill_survivors(procs: Iterable[ComponentProcess], cluster_dir: Path, grace: float = 5.0) -> list[str]:
    """Stop what is still running of ``procs`` (SIGTERM, SIGKILL after ``grace``), each checked to still
    be its component first; returns a sentence for each process left alone."""
    return processes.stop(procs, cluster_dir, grace)


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errs = [ln for ln in lines if "ERROR" in ln or "error" in ln.lower()]
    line = (errs or lines or ["(no output)"])[-1]
    return re.sub(r"\x1b\[[0-9;]*m", "", line)[:400]


def _wait_healthy(port: int, info: ClusterInfo, timeout: float) -> float | None:
    """When the component's /healthz answered ok (epoch seconds), or None after the timeout."""
    ctx = info.credentials().ssl_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    deadline = time.time() + timeout
    while time.time() < deadline:
        with contextlib.suppress(OSError), \
                urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=2, context=ctx) as r:
            if r.status == 200:
                return time.time()
        time.sleep(0.2)
    return None
