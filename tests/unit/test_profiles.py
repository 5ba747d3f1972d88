"""pprof CPU profiles: the pure-Python decoder and top table, ``--profile`` names, the stored index read
back by the analysis, and the report's profile section."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from kwokbench.errors import ScenarioError, StoreError
from kwokbench.figures.pprof import FORMAT_VERSION, INDEX, PROFILES, decode, profiles_section, top, top_of_file
from kwokbench.measure.profile import MAX_SECONDS, MIN_SECONDS, components, profile_seconds
from kwokbench.report.render import write_report
from kwokbench.report.table import summary_rows
from kwokbench.scenario import parse_scenario
from tests.unit.fake_runs import fake_run

GOLDEN = Path(__file__).parent / "golden"


# ---- a minimal protobuf encoder, the inverse of what the decoder reads ------------------------------


def varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def vfield(num: int, v: int) -> bytes:
    return varint(num << 3) + varint(v)


def lfield(num: int, payload: bytes) -> bytes:
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def packed(num: int, values: list[int]) -> bytes:
    return lfield(num, b"".join(varint(v) for v in values))


def profile_bytes(packed_ints: bool = True) -> bytes:
    """main → schedule → filter (inlined into schedule: one location, two lines), and main → bind.

    Samples (cpu ns): filter 30 ms, schedule 10 ms, bind 20 ms, filter again 40 ms."""
    strings = ["", "samples", "count", "cpu", "nanoseconds", "main", "schedule", "filter", "bind"]
    fn = {1: 5, 2: 6, 3: 7, 4: 8}  # function id → name index
    out = b""
    for t, u in ((1, 2), (3, 4)):
        out += lfield(1, vfield(1, t) + vfield(2, u))
    samples = [([2, 1], [3, 30_000_000]), ([3, 1], [1, 10_000_000]), ([4, 1], [2, 20_000_000]),
               ([2, 1], [4, 40_000_000])]
    for locs, values in samples:
        if packed_ints:
            out += lfield(2, packed(1, locs) + packed(2, values))
        else:
            out += lfield(2, b"".join(vfield(1, x) for x in locs) + b"".join(vfield(2, x) for x in values))
    # location 2 is schedule with filter inlined into it (innermost line first); 3 is schedule alone
    for loc, funcs in ((1, [1]), (2, [3, 2]), (3, [2]), (4, [4])):
        out += lfield(4, vfield(1, loc) + b"".join(lfield(4, vfield(1, f) + vfield(2, 10)) for f in funcs))
    for fid, name in fn.items():
        out += lfield(5, vfield(1, fid) + vfield(2, name))
    out += b"".join(lfield(6, s.encode()) for s in strings)
    out += vfield(10, 5_000_000_000)
    return gzip.compress(out)


@pytest.mark.parametrize("packed_ints", [True, False])
def test_top_flat_and_cumulative(packed_ints: bool) -> None:
    p = decode(profile_bytes(packed_ints))
    assert p.sample_types == [("samples", "count"), ("cpu", "nanoseconds")]
    assert p.duration_seconds == 5.0
    t = top(p)
    assert (t["value"], t["unit"], t["samples"]) == ("cpu", "seconds", 4)
    assert t["total"] == pytest.approx(0.1)
    rows = {r["function"]: r for r in t["top"]}
    assert [r["function"] for r in t["top"]] == ["filter", "bind", "schedule"]  # main is never innermost
    assert rows["filter"]["flat"] == pytest.approx(0.07) and rows["filter"]["flat_share"] == pytest.approx(0.7)
    assert rows["schedule"]["flat"] == pytest.approx(0.01) and rows["schedule"]["cum"] == pytest.approx(0.08)
    assert t["top_cum"][0]["function"] == "main" and t["top_cum"][0]["cum_share"] == pytest.approx(1.0)
    assert t["top_cum"][0]["flat"] == 0.0
    assert [r["function"] for r in top(p, 1)["top"]] == ["filter"]


def test_a_go_runtime_profile() -> None:
    """A real Go CPU profile (kube-scheduler under load, saved by ``run --profile scheduler``)."""
    data = (GOLDEN / "kube-scheduler.pb.gz").read_bytes()
    t = top_of_file(data)
    assert t["value"] == "cpu" and t["unit"] == "seconds" and t["samples"] > 100
    assert len(t["top"]) == 10 and len(t["top_cum"]) == 10
    assert t["top"] == sorted(t["top"], key=lambda r: -r["flat"])
    assert all(r["cum"] >= r["flat"] for r in t["top"])
    assert sum(r["flat_share"] for r in t["top"]) <= 1.0
    assert any("k8s.io/kubernetes/pkg/scheduler" in r["function"] for r in t["top_cum"])


def test_not_a_profile() -> None:
    with pytest.raises(StoreError, match="not a readable pprof profile"):
        top_of_file(b"\x1f\x8bnot gzip at all")
    with pytest.raises(StoreError, match="not a readable pprof profile"):
        top_of_file(b"<html>403 forbidden</html>")


def test_profile_names() -> None:
    assert components(["scheduler", "kube-apiserver", "scheduler"]) == ["kube-scheduler", "kube-apiserver"]
    assert components(["controller-manager"]) == ["kube-controller-manager"]
    with pytest.raises(ScenarioError, match="--profile etcd: not a profiled component"):
        components(["etcd"])


def test_profile_length_follows_the_first_phase() -> None:
    def sc(count: int, qps: float) -> int:
        return profile_seconds(parse_scenario(
            f"schema_version: 1\nname: s\ncluster: {{node_groups: [{{name: c, count: 1}}]}}\n"
            f"workloads: [{{name: p, count: {count}, arrival: {{type: qps, qps: {qps}}}}}]\n"))

    assert sc(1000, 100) == 12  # 9.99 s of schedule and the tail after it
    assert sc(100_000, 1000) == MAX_SECONDS
    assert sc(10, 100) == MIN_SECONDS


def _stored(run: Path, profiles: dict[str, object]) -> None:
    (run / PROFILES).mkdir(parents=True, exist_ok=True)
    (run / PROFILES / INDEX).write_bytes(orjson.dumps({"format_version": FORMAT_VERSION, "seconds": 12,
                                                       "started": 0.0, "profiles": profiles}))


def test_analysis_reads_the_index(tmp_path: Path) -> None:
    assert profiles_section(tmp_path) is None  # no profile asked for
    (tmp_path / PROFILES).mkdir()
    (tmp_path / PROFILES / "kube-scheduler.pb.gz").write_bytes(profile_bytes())
    (tmp_path / PROFILES / "kube-apiserver.pb.gz").write_bytes(b"garbage")
    _stored(tmp_path, {"kube-scheduler": {"file": "profiles/kube-scheduler.pb.gz", "bytes": 1},
                       "kube-apiserver": {"file": "profiles/kube-apiserver.pb.gz", "bytes": 7},
                       "kube-controller-manager": {"error": "OSError: HTTP 403: forbidden"}})
    out = profiles_section(tmp_path)
    assert out is not None
    assert out["kube-scheduler"]["top"][0]["function"] == "filter" and out["kube-scheduler"]["seconds"] == 12
    assert "not a readable pprof profile" in out["kube-apiserver"]["error"]
    assert out["kube-controller-manager"] == {"error": "OSError: HTTP 403: forbidden"}
    rows = dict(summary_rows({"profiles": out})[1])
    assert rows["CPU profile kube-scheduler"] == "profiles/kube-scheduler.pb.gz; top: filter (70% flat)"
    assert rows["CPU profile kube-controller-manager"] == "none: OSError: HTTP 403: forbidden"
    (tmp_path / PROFILES / INDEX).write_bytes(orjson.dumps({"format_version": 99, "profiles": {}}))
    with pytest.raises(StoreError, match="format version 99 is not supported"):
        profiles_section(tmp_path)


def test_report_links_the_profile_and_shows_its_top(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "runs", "default", 0, 100.0)
    (run.path / PROFILES).mkdir()
    (run.path / PROFILES / "kube-scheduler.pb.gz").write_bytes(profile_bytes())
    _stored(run.path, {"kube-scheduler": {"file": "profiles/kube-scheduler.pb.gz", "bytes": 1}})
    assert run.summary is not None
    run.summary["profiles"] = profiles_section(run.path)
    html = write_report([run], tmp_path / "out").html.read_text()
    assert "<h2>CPU profiles</h2>" in html
    assert f'href="../runs/{run.path.name}/profiles/kube-scheduler.pb.gz"' in html
    assert "<td>filter</td><td>0.07 s</td>" in html and "go tool pprof" in html
