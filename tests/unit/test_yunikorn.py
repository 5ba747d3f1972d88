"""YuniKorn, the pure parts: its ConfigMap from a scenario's ``yunikorn:`` block, the labels and task-group
annotations written into pods, its exit reason from its log, the summary section from real v1.8.0
``/ws/v1/metrics`` payloads (golden files recorded from a yunikorn-queues run here), and the pinned-source
checks of the build. The process itself runs against real clusters (tests/e2e/test_yunikorn.py)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kwokbench.components import yunikorn as yk
from kwokbench.errors import ScenarioError, ToolchainError
from kwokbench.metrics import derive
from kwokbench.plan import check_scenario, manifest_factories
from kwokbench.scenario import parse_scenario
from kwokbench.toolchain import sources

GOLDEN = Path(__file__).parent / "golden"
HEAD = "schema_version: 1\nname: s\ncluster: {node_groups: [{name: c, count: 3}]}\n"


def _scenario(schedulers: str, workloads: str = "[{name: p, count: 250}]"):  # type: ignore[no-untyped-def]
    return parse_scenario(HEAD + f"schedulers: {schedulers}\nworkloads: {workloads}\n")


def test_queues_yaml_is_hierarchical_with_resources_and_policies(tmp_path: Path) -> None:
    sc = _scenario("[{name: y, binary: yunikorn, yunikorn: {node_sort_policy: binpacking, queues: ["
                   "{name: a, guaranteed: {cpu: 10, memory: 4Gi}, max: {vcore: 20}, sort_policy: fair, "
                   "properties: {priority.offset: '5'}, queues: [{name: leaf}]}, {name: b, parent: true}], "
                   "placement_rules: [{name: tag, value: namespace, create: true, parent: {name: fixed, "
                   "value: root.b}}]}}]")
    doc = yaml.safe_load(yk.queues_yaml(sc.schedulers[0].yunikorn, tmp_path))
    [part] = doc["partitions"]
    assert part["name"] == "default" and part["nodesortpolicy"] == {"type": "binpacking"}
    # the rules as given (YuniKorn's own schema), in place of the default "provided"
    assert part["placementrules"] == [{"name": "tag", "value": "namespace", "create": True,
                                       "parent": {"name": "fixed", "value": "root.b"}}]
    assert yaml.safe_load(yk.queues_yaml(None, tmp_path))["partitions"][0]["placementrules"] == [
        {"name": "provided", "create": True}]
    [root] = part["queues"]
    assert root["name"] == "root" and root["submitacl"] == "*"
    a, b = root["queues"]
    # cpu is written as YuniKorn's vcore; quantities stay strings for YuniKorn to parse
    assert a["resources"] == {"guaranteed": {"vcore": "10", "memory": "4Gi"}, "max": {"vcore": "20"}}
    # sort_policy is a property too, beside the queue's own
    assert a["properties"] == {"application.sort.policy": "fair", "priority.offset": "5"} and a["parent"] is True
    assert a["queues"] == [{"name": "leaf"}]
    assert b == {"name": "b", "parent": True}


def test_default_config_and_client_limits(tmp_path: Path) -> None:
    doc = yaml.safe_load(yk.queues_yaml(None, tmp_path))
    assert doc["partitions"][0]["queues"] == [{"name": "root", "submitacl": "*"}]
    data = yk.config_data(None, tmp_path, 100000, 100000)
    assert data["kubernetes.qps"] == "100000" and data["service.disableGangScheduling"] == "false"
    assert yk.client_limits(False, None, None) == (yk.UNLIMITED_CLIENT, yk.UNLIMITED_CLIENT)
    assert yk.client_limits(True, None, None) == (1000, 1000)  # YuniKorn's own default
    assert yk.client_limits(False, 50.0, None) == (50, 50) and yk.client_limits(True, 50.0, 80) == (50, 80)
    spec = _scenario("[{name: y, binary: yunikorn, yunikorn: {settings: {service.schedulingInterval: 100ms, "
                     "log.level: WARN, service.enableConfigHotRefresh: false}}}]").schedulers[0].yunikorn
    data = yk.config_data(spec, tmp_path, 1, 1)
    assert data["service.schedulingInterval"] == "100ms" and data["service.enableConfigHotRefresh"] == "false"


def test_queues_file_is_read_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text("partitions: []\n")
    spec = _scenario("[{name: y, binary: yunikorn, yunikorn: {queues_file: q.yaml}}]").schedulers[0].yunikorn
    assert yk.queues_yaml(spec, tmp_path) == "partitions: []\n"
    with pytest.raises(ScenarioError, match=re.escape("queues_file missing.yaml")):
        spec = spec.model_copy(update={"queues_file": "missing.yaml"})
        yk.queues_yaml(spec, tmp_path)


@pytest.mark.parametrize(("schedulers", "message"), [
    ("[{name: y, binary: yunikorn, scheduler_name: other}]", "YuniKorn serves schedulerName yunikorn only"),
    ("[{name: y, binary: yunikorn, config: c.yaml}]", "schedulers.0.config: not a setting of binary: yunikorn"),
    ("[{name: y, yunikorn: {}}]", r"not a setting of binary: kube-scheduler \(it applies to binary: yunikorn\)"),
    ("[{name: y, binary: yunikorn, yunikorn: {queues_file: q.yaml, node_sort_policy: fair}}]",
     "give queues_file or node_sort_policy, not both"),
    ("[{name: y, binary: yunikorn, yunikorn: {queues_file: q.yaml, placement_rules: [{name: tag, value: ns}]}}]",
     "give queues_file or placement_rules, not both"),
    ("[{name: y, binary: yunikorn, yunikorn: {queues: [{name: a, properties: {priority.offset: 5}}]}}]",
     r"yunikorn.queues.0.properties.priority\.offset: Input should be a valid string"),
    ("[{name: y, binary: yunikorn, yunikorn: {settings: {queues.yaml: x}}}]", "is not a ConfigMap key"),
])
def test_bad_yunikorn_variants_are_one_line(schedulers: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        _scenario(schedulers)


def test_pods_carry_scheduler_name_application_and_queue(tmp_path: Path) -> None:
    sc = _scenario("[{name: y, binary: yunikorn}]",
                   "[{name: p, count: 250, yunikorn: {queue: root.t, pods_per_app: 100}}, {name: q, count: 5}]")
    f, g = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    pods = [json.loads(f.body(i)) for i in (0, 99, 100, 249)]
    assert {p["spec"]["schedulerName"] for p in pods} == {"yunikorn"}
    assert {p["metadata"]["labels"]["queue"] for p in pods} == {"root.t"}
    assert [p["metadata"]["labels"]["applicationId"] for p in pods] == ["p-lbl-app-0", "p-lbl-app-0",
                                                                        "p-lbl-app-1", "p-lbl-app-2"]
    # defaults: root.default, 100 bare pods an application
    q = json.loads(g.body(3))
    assert q["metadata"]["labels"]["queue"] == "root.default" and q["metadata"]["labels"]["applicationId"]
    # a kube-scheduler variant of the same scenario writes none of it
    sc2 = _scenario("[{name: d}]", "[{name: p, count: 250, yunikorn: {queue: root.t}}]")
    [h] = manifest_factories(sc2, tmp_path, "lbl", variant=sc2.schedulers[0])
    plain = json.loads(h.body(0))
    assert plain["spec"]["schedulerName"] == "default-scheduler"  # the template's own
    assert "applicationId" not in plain["metadata"]["labels"] and "queue" not in plain["metadata"]["labels"]


def test_a_job_is_one_application(tmp_path: Path) -> None:
    sc = _scenario("[{name: y, binary: yunikorn}]", "[{name: j, template: job, count: 3, params: {completions: 4}}]")
    [f] = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    apps = [json.loads(f.body(i))["spec"]["template"]["metadata"]["labels"]["applicationId"] for i in range(3)]
    assert apps == ["j-lbl-app-0", "j-lbl-app-1", "j-lbl-app-2"]


def test_a_gang_is_a_task_group(tmp_path: Path) -> None:
    sc = _scenario("[{name: y, binary: yunikorn}]",
                   "[{name: g, count: 24, gang: {size: 12, min_member: 10}, params: {cpu: '1', memory: 1Gi}}]")
    [f] = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    a, b = json.loads(f.body(0)), json.loads(f.body(12))
    assert a["metadata"]["labels"]["applicationId"] != b["metadata"]["labels"]["applicationId"]
    ann = a["metadata"]["annotations"]
    assert ann[yk.TASK_GROUP_NAME] == "members"
    assert json.loads(ann[yk.TASK_GROUPS]) == [{"name": "members", "minMember": 10,
                                                "minResource": {"cpu": "1", "memory": "1Gi"}}]
    assert "gangSchedulingStyle=Hard" in ann[yk.POLICY]
    bad = _scenario("[{name: y, binary: yunikorn}]",
                    "[{name: g, count: 24, gang: {size: 12}, yunikorn: {pods_per_app: 5}}]")
    with pytest.raises(ScenarioError, match=re.escape("pods_per_app 5 must equal gang.size 12")):
        check_scenario(bad, tmp_path)


def test_fatal_line_is_yunikorns_own_reason(tmp_path: Path) -> None:
    log = tmp_path / "y.log"
    log.write_text("2026-11-24T19:30:00.000Z\tINFO\tshim\tshim/main.go:39\tBuild info\n"
                   "2026-11-24T19:30:01.000Z\tFATAL\tshim\tshim/main.go:59\tUnable to start scheduler\t"
                   '{"error": "registration of RM failed: bad"}\ngoroutine 1 [running]:\n')
    assert yk.fatal_line(log) == 'Unable to start scheduler {"error": "registration of RM failed: bad"}'
    assert yk.fatal_line(tmp_path / "none.log") is None


def _series() -> pd.DataFrame:
    rows = []
    for t, name in ((100.0, "first"), (113.0, "mid"), (126.0, "last")):
        text = gzip.decompress((GOLDEN / f"yunikorn-{name}.prom.gz").read_bytes()).decode()
        rows.append((t, "kube-scheduler", derive.SCRAPED, "{}", 1.0))
        for n, labels, v in derive.parse_payload(text, derive.keep_of("kube-scheduler")):
            rows.append((t, "kube-scheduler", n, json.dumps(labels, sort_keys=True), v))
    return pd.DataFrame(rows, columns=["t", "component", "name", "labels", "value"])


def test_section_from_real_yunikorn_metrics() -> None:
    """The yunikorn-queues run: tenant-a capped at its max of 100 CPUs, tenant-b at 60."""
    s = _series()
    y = yk.yunikorn_section(s, "kube-scheduler", (100.0, 126.0), {"cpu_seconds": 0.5})
    assert y is not None and y["cpu_seconds"] == 0.5
    assert sum(y["allocation_attempts"].values()) >= 0
    lat = y["scheduling_latency_seconds"]
    assert lat["count"] > 0 and lat["mean"] < 0.1  # seconds, though the family says milliseconds
    a, b = y["queues"]["root.tenant-a"], y["queues"]["root.tenant-b"]
    assert a["guaranteed"] == {"vcore": 80000.0} and a["max"] == {"vcore": 100000.0}
    assert a["allocated_peak"]["vcore"] == 100000.0 and b["allocated_peak"]["vcore"] == 60000.0
    assert a["series"]["t"] == [13.0, 26.0]  # the gauge appears with its first allocation
    assert a["share_of_guarantee_mean"]["vcore"] == pytest.approx(1.25)
    # a kube-scheduler's scrapes hold no yunikorn_ family: no section
    assert yk.yunikorn_section(s[s["name"] == derive.SCRAPED], "kube-scheduler", None, {}) is None


def _archive(path: Path, top: str, module: str) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in ((f"{top}/go.mod", f"module {module}\n\ngo 1.24\n".encode()),
                           (f"{top}/main.go", b"package main\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def test_pinned_archives_are_verified_and_checkouts_hashed(tmp_path: Path) -> None:
    d = tmp_path / "src"
    d.mkdir()
    sha = _archive(d / "m-v1.tar.gz", "m-1", "example.com/m")
    pin = sources.PinnedSource("example.com/m", "m-v1.tar.gz", sha, "example.com/m at tag v1")
    [found] = sources.locate([pin], d, tmp_path / "work", tmp_path / "cache")
    assert found.origin == f"sha256:{sha}" and (found.dir / "go.mod").is_file()
    assert sources.peek_origins([pin], d) == {"example.com/m": f"sha256:{sha}"}
    assert sources.peek_origins([pin], d / "m-v1.tar.gz") == {"example.com/m": f"sha256:{sha}"}
    # another archive under the pinned name is refused, never built
    bad = pin.__class__(pin.module, pin.archive, "0" * 64, pin.upstream)
    with pytest.raises(ToolchainError, match="is not the pinned 0000000000000000"):
        sources.locate([bad], d, tmp_path / "work2", tmp_path / "cache")
    # a checkout: built from a copy, identified by a hash of its Go files
    co = tmp_path / "checkouts" / "m"
    co.mkdir(parents=True)
    (co / "go.mod").write_text("module example.com/m\n")
    [found] = sources.locate([pin], co.parent, tmp_path / "work3", tmp_path / "cache")
    assert found.origin.startswith("dir:") and found.dir != co and (found.dir / "go.mod").is_file()
    assert sources.peek_origins([pin], co.parent) == {"example.com/m": found.origin}
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ToolchainError, match=re.escape("neither m-v1.tar.gz nor a checkout")):
        sources.locate([pin], empty, tmp_path / "w4", tmp_path / "c")


def _tar(path: Path, *members: tarfile.TarInfo) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            tar.addfile(m, io.BytesIO(b"x" * m.size) if m.isfile() else None)


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    m = tarfile.TarInfo(name)
    m.type, m.linkname, m.size = kind, link, 1 if kind == tarfile.REGTYPE else 0
    return m


def test_an_archive_is_extracted_only_inside_its_folder_on_every_python(tmp_path: Path) -> None:
    """Python before 3.11.4 (Debian 12's 3.11.2) has no ``data`` filter: the same refusals by hand. A fresh
    machine's cold `make test` on that Python failed every build from pinned sources on ``filter=``."""
    ok = tmp_path / "ok.tar.gz"
    _tar(ok, _member("m-1", tarfile.DIRTYPE), _member("m-1/go.mod"), _member("m-1/l", tarfile.SYMTYPE, "go.mod"))
    with tarfile.open(ok) as tar:
        sources.refuse_escapes(tar, tmp_path / "out")
        sources.extract_all(tar, tmp_path / "out")
    assert (tmp_path / "out" / "m-1" / "go.mod").read_bytes() == b"x"
    for bad, says in ((_member("../evil"), "outside the folder"), (_member("/etc/evil"), "outside the folder"),
                      (_member("m-1/l", tarfile.SYMTYPE, "../../etc/passwd"), "a link to ../../etc/passwd"),
                      (_member("m-1/h", tarfile.LNKTYPE, "../x"), "a link to ../x"),
                      (_member("m-1/dev", tarfile.CHRTYPE), "not a file, folder or link")):
        path = tmp_path / "bad.tar.gz"
        _tar(path, bad)
        with tarfile.open(path) as tar, pytest.raises(tarfile.TarError, match=re.escape(says)):
            sources.refuse_escapes(tar, tmp_path / "out2")


def test_a_missing_source_names_what_to_give_and_nothing_is_downloaded(tmp_path: Path) -> None:
    pin = sources.PinnedSource("example.com/m", "m-v1.tar.gz", "0" * 64, "example.com/m at tag v1")
    with pytest.raises(ToolchainError, match=re.escape(
            "example.com/m: neither m-v1.tar.gz nor a checkout of it given; give KWOKBENCH_SOURCES or --source DIR "
            "holding the pinned archive (sha256 0000000000000000…) or a checkout of example.com/m at tag v1")):
        sources.locate([pin], None, tmp_path / "w", tmp_path / "c")
    assert all(" at " in s.upstream for s in yk.SOURCES)


def test_pinned_yunikorn_sources_match_the_shared_checksums() -> None:
    sums = Path(__file__).resolve().parents[3] / "shared" / "sources" / "SHA256SUMS"
    if not sums.is_file():
        pytest.skip("no ../shared/sources beside the repo")
    pinned = dict(reversed(line.split()) for line in sums.read_text().splitlines() if line.strip())
    for s in yk.SOURCES:
        assert pinned[s.archive] == s.sha256
