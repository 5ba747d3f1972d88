"""What a new user sees through the real CLI without a terminal (a CI log): whole lines, one-line errors.

None of these starts a cluster: every case ends before one would be created.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO, assert_one_line_error, kwokbench

GOOD = (REPO / "scenarios" / "quickstart.yaml").read_text()


def _isolated(tmp_path: Path) -> dict[str, str]:
    return {"KWOKBENCH_HOME": str(tmp_path / "home"), "KWOKBENCH_CACHE": str(tmp_path / "cache")}


def test_up_with_a_param_that_is_not_a_quantity_fails_before_anything(tmp_path: Path) -> None:
    env = _isolated(tmp_path)
    res = kwokbench("up", "--name", "q", "--nodes", "3", "--param", "cpu=abc", env=env)
    assert_one_line_error(res, "node group default: status.allocatable.cpu: 'abc' is not a Kubernetes quantity")
    # attaching checks the template before asking or touching the other cluster
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    res = kwokbench("up", "--kubeconfig", str(kubeconfig), "--param", "memory=lots", env=env)
    assert_one_line_error(res, "status.allocatable.memory: 'lots' is not a Kubernetes quantity")
    assert not (tmp_path / "home").exists() and not (tmp_path / "cache").exists()


def test_validate_reports_bad_quantities_and_oversized_objects(tmp_path: Path) -> None:
    s = tmp_path / "s.yaml"
    s.write_text(GOOD)
    assert_one_line_error(kwokbench("validate", str(s), "--set", "workloads.0.params.cpu=abc"),
                          "workload pods: spec.containers[0].resources.requests.cpu: 'abc' is not a Kubernetes "
                          "quantity")
    assert_one_line_error(kwokbench("validate", str(s), "--set", "cluster.node_groups.0.params.memory=256GB"),
                          "node group cpu: status.allocatable.memory: '256GB' is not a Kubernetes quantity")
    (tmp_path / "big.yaml.j2").write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: '{{ name }}'\n"
                                          "  annotations: {blob: '{{ \"x\" * 3000000 }}'}\n")
    s.write_text(GOOD.replace("template: pod", "template: big.yaml.j2"))
    assert_one_line_error(kwokbench("validate", str(s)), "workload pods: template big.yaml.j2 renders a 2.9 MiB Pod; "
                                                         "the apiserver refuses objects over 1.5 MiB")


def test_log_lines_are_not_wrapped_without_a_terminal(tmp_path: Path) -> None:
    deep = tmp_path / ("a-rather-long-folder-name-" * 4) / ("and-another-one-" * 4)
    deep.mkdir(parents=True)
    s = deep / "scenario-with-a-long-name.yaml"
    s.write_text(GOOD)
    for columns in ("", "60"):  # unset: rich would assume 80; set: still no path is split
        res = kwokbench("validate", str(s), env={"COLUMNS": columns}, check=True)
        assert len(str(s)) > 160
        assert res.stderr.splitlines()[0].startswith(f"{s}: ok — 100 nodes"), res.stderr


def test_help_groups_the_commands_in_panels_in_the_order_of_the_data_flow() -> None:
    out = kwokbench("--help", env={"COLUMNS": "100"}, check=True).stdout
    panels: dict[str, list[str]] = {}
    current = ""
    for line in out.splitlines():
        if line.startswith("╭─ "):
            current = line.removeprefix("╭─ ").split(" ─")[0]
            panels[current] = []
        elif line.startswith("│ ") and current != "Options" and line[2] != " ":  # not a wrapped help line
            panels[current].append(line[2:].split()[0])
    assert panels == {"Options": [], "Cluster": ["up", "status", "down", "capture"],
                      "Run": ["validate", "schema", "run", "sweep", "bisect", "merge", "ceiling"],
                      "Analyse": ["analyse", "report", "gate"], "History": ["history", "detect"],
                      "Toolchain": ["tools"]}
