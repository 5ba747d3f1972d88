"""``run --profile`` with a name that is not a profiled component: one line, exit 2, before any cluster."""

from __future__ import annotations

from tests.conftest import REPO, assert_one_line_error, kwokbench


def test_unknown_profile_component() -> None:
    res = kwokbench("run", str(REPO / "scenarios" / "quickstart.yaml"), "--profile", "etcd", timeout=60)
    assert_one_line_error(res, "--profile etcd: not a profiled component (one of: scheduler, apiserver, "
                               "controller-manager)")
    assert "cluster" not in res.stdout
