"""`kwokbench capture` through the real CLI against clusters that cannot be read: one `error:` line naming the server
and the reason, exit 2, nothing written (not the output folder, not a temporary folder beside it, not the key
material of the kubeconfig), no process left. Reading a real cluster: tests/e2e/test_capture.py."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import psutil
import pytest
import yaml

from tests.conftest import assert_one_line_error, free_port, kwokbench


def _kubeconfig(path: Path, server: str, user: dict[str, object], cluster: dict[str, object] | None = None) -> str:
    tls = cluster or {"insecure-skip-tls-verify": True}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "prod-eu",
        "contexts": [{"name": "prod-eu", "context": {"cluster": "prod", "user": "admin"}}],
        "clusters": [{"name": "prod", "cluster": {"server": server, **tls}}],
        "users": [{"name": "admin", "user": user}]}))
    return str(path)


def _key_pair(where: Path) -> tuple[str, str]:
    """A throwaway self-signed certificate and its key, base64 as a kubeconfig's ``*-data`` holds them."""
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a throwaway certificate")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(where / "k.pem"), "-out", str(where / "c.pem"), "-days", "2",
                    "-subj", "/CN=kwokbench-test"], check=True, capture_output=True)
    cert, key = (base64.b64encode((where / f).read_bytes()).decode() for f in ("c.pem", "k.pem"))
    (where / "k.pem").unlink()
    (where / "c.pem").unlink()
    return cert, key


def _left_behind(tmp_path: Path) -> list[psutil.Process]:
    """Processes still running whose command line names this test's folder."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(tmp_path) in a for a in p.info["cmdline"] or []):
                out.append(p)
        except psutil.Error:
            continue
    return out


def test_a_cluster_refusing_connections_is_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    cert, key = _key_pair(scratch)
    server = f"https://127.0.0.1:{free_port()}"
    kc = _kubeconfig(tmp_path / "kubeconfig", server, {"client-certificate-data": cert, "client-key-data": key},
                     {"certificate-authority-data": cert})
    res = kwokbench("capture", "--kubeconfig", kc, "-o", str(tmp_path / "out"), env={"TMPDIR": str(scratch)},
                    timeout=120)
    assert_one_line_error(res, f"cannot read the cluster at {server} (context prod-eu): connection refused")
    assert [line for line in res.stderr.splitlines() if "error" in line.lower()] == [
        f"error: cannot read the cluster at {server} (context prod-eu): connection refused"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kubeconfig", "tmp"]  # no output, no hidden temp folder
    assert list(scratch.iterdir()) == []  # the client key written out for TLS is gone again
    assert _left_behind(tmp_path) == []


def test_a_host_that_does_not_resolve(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kubeconfig", "https://kwokbench-capture.invalid:6443", {"token": "t"})
    res = kwokbench("capture", "--kubeconfig", kc, "-o", str(tmp_path / "out"), timeout=120)
    assert_one_line_error(res, "cannot read the cluster at https://kwokbench-capture.invalid:6443 (context prod-eu): "
                               "DNS: cannot resolve kwokbench-capture.invalid")
    assert not (tmp_path / "out").exists()


def test_tls_files_that_do_not_load(tmp_path: Path) -> None:
    junk = base64.b64encode(b"not a certificate").decode()
    kc = _kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{free_port()}", {"token": "t"},
                     {"certificate-authority-data": junk})
    res = kwokbench("capture", "--kubeconfig", kc, "-o", str(tmp_path / "out"), env={"TMPDIR": str(tmp_path)})
    assert_one_line_error(res, "cannot use the TLS files of context prod-eu: TLS: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kubeconfig"]


@pytest.mark.parametrize(("args", "needle"), [
    (["--namespace", "Team_A"], "--namespace 'Team_A': not a namespace name"),
    (["--keep-names", "--salt", "s"], "give one or the other"),
    (["--salt", ""], "an empty salt"),
])
def test_bad_options_are_refused_before_the_cluster_is_read(tmp_path: Path, args: list[str], needle: str) -> None:
    kc = _kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{free_port()}", {"token": "t"})
    assert_one_line_error(kwokbench("capture", "--kubeconfig", kc, "-o", str(tmp_path / "out"), *args), needle)
    assert not (tmp_path / "out").exists()


def test_an_output_folder_that_is_not_empty_is_refused_before_the_cluster_is_read(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{free_port()}", {"token": "t"})
    out = tmp_path / "out"
    out.mkdir()
    (out / "pods.csv").write_text("precious\n")
    res = kwokbench("capture", "--kubeconfig", kc, "-o", str(out))
    assert_one_line_error(res, f"-o {out}: the folder is not empty (--force writes")
    assert "cannot read the cluster" not in res.stderr
    assert (out / "pods.csv").read_text() == "precious\n"
    # --force gets as far as the cluster, which refuses: the folder is left as it was
    res = kwokbench("capture", "--kubeconfig", kc, "-o", str(out), "--force")
    assert_one_line_error(res, "connection refused")
    assert [p.name for p in out.iterdir()] == ["pods.csv"] and (out / "pods.csv").read_text() == "precious\n"


def test_kubeconfigs_kwokbench_cannot_use(tmp_path: Path) -> None:
    assert_one_line_error(kwokbench("capture", "--kubeconfig", str(tmp_path / "none"), "-o", str(tmp_path / "o")),
                          "no such file")
    exec_user: dict[str, object] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
                          "args": ["eks", "get-token", "--cluster-name", "prod"]}}
    kc = _kubeconfig(tmp_path / "kubeconfig", "https://example.invalid", exec_user)
    assert_one_line_error(kwokbench("capture", "--kubeconfig", kc, "-o", str(tmp_path / "o")),
                          "user 'admin' gets its credentials from an exec plugin, which kwokbench does not run")
    assert_one_line_error(kwokbench("capture", "--kubeconfig", kc, "--context", "staging", "-o", str(tmp_path / "o")),
                          "no context named 'staging'")
    assert not (tmp_path / "o").exists()
