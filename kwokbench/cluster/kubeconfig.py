"""Just enough kubeconfig to talk to an apiserver over TLS: server, CA and client credentials.

Key material is only ever read from where the kubeconfig points; it is never copied into a run
directory (the run records the kubeconfig *path*, not its contents).
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kwokbench.errors import ClusterError


@dataclass(frozen=True)
class Credentials:
    server: str
    ca_file: Path | None
    cert_file: Path | None
    key_file: Path | None
    token: str | None = None
    insecure: bool = False

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file and self.key_file:
            ctx.load_cert_chain(str(self.cert_file), str(self.key_file))
        return ctx

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def _materialise(entry: dict[str, Any], key: str, base: Path, private: bool) -> Path | None:
    """A ``*-data`` field is written to a 0600 temp file (ssl needs paths); a path is resolved."""
    if entry.get(f"{key}-data"):
        fd, name = tempfile.mkstemp(prefix="kwokbench-", suffix=".pem")
        with os.fdopen(fd, "wb") as f:
            f.write(base64.b64decode(entry[f"{key}-data"]))
        if private:
            os.chmod(name, 0o600)
        return Path(name)
    if entry.get(key):
        p = Path(os.path.expanduser(entry[key]))
        return p if p.is_absolute() else base / p
    return None


def load_kubeconfig(path: Path, context: str | None = None) -> Credentials:
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ClusterError(f"cannot read kubeconfig {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise ClusterError(f"kubeconfig {path} is not valid YAML: {e}") from e
    if not isinstance(doc, dict):
        raise ClusterError(f"kubeconfig {path} is empty or not a mapping")
    ctx_name = context or doc.get("current-context")

    def pick(kind: str, name: str | None) -> dict[str, Any]:
        for item in doc.get(kind + "s") or []:
            if item.get("name") == name:
                return dict(item.get(kind) or {})
        raise ClusterError(f"kubeconfig {path}: no {kind} named {name!r}")

    ctx = pick("context", ctx_name)
    cluster = pick("cluster", ctx.get("cluster"))
    user = pick("user", ctx.get("user"))
    base = path.parent
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text().strip()
    return Credentials(
        server=str(cluster.get("server", "")).rstrip("/"),
        ca_file=_materialise(cluster, "certificate-authority", base, private=False),
        cert_file=_materialise(user, "client-certificate", base, private=False),
        key_file=_materialise(user, "client-key", base, private=True),
        token=token,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
    )
