"""``sweep --emit-job N`` through the real CLI: the manifest on stdout, or one line for a bad combination."""

from __future__ import annotations

import yaml

from tests.conftest import REPO, assert_one_line_error, kwokbench


def test_cli_prints_the_manifest_and_refuses_bad_combinations() -> None:
    s = str(REPO / "scenarios/quickstart.yaml")
    res = kwokbench("sweep", s, "--nodes", "100", "--qps", "50,100", "--emit-job", "2", "--image", "i:1", check=True)
    cm, job = list(yaml.safe_load_all(res.stdout))
    assert cm["data"]["quickstart.yaml"] == (REPO / "scenarios/quickstart.yaml").read_text()
    assert job["spec"]["completions"] == 2
    assert_one_line_error(kwokbench("sweep", s, "--emit-job", "2"), "--emit-job needs --image IMAGE")
    assert_one_line_error(kwokbench("sweep", s, "--emit-job", "2", "--image", "i", "--shard", "1/2"), "drop --shard")
