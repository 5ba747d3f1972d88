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
    temporary: tuple[Path, ...] = ()
    """The files ``*-data`` fields were written to; :meth:`forget` deletes them."""

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

    def forget(self) -> None:
        """Delete the key material this process wrote out; for a one-off use such as ``capture``, which
        should leave no copy of a user's client key behind."""
        for p in self.temporary:
            p.unlink(missing_ok=True)


def _materialise(entry: dict[str, Any], key: str, base: Path, private: bool) -> Path | None:
    """A ``*-data`` field is written to a 0600 temp file (ssl needs paths); a path is resolved."""
    if entry.get(f"{key}-data"):
        fd, name = tempfile.mkstemp(prefix="kwokbench-", suffix=".pem")
        with os.fdopen(fd, "wb") as f:
            try:
                f.write(base64.b64decode(entry[f"{key}-data"]))
            except ValueError as e:
                os.unlink(name)
                raise ClusterError(f"kubeconfig: {key}-data is not valid base64: {e}") from e
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
        try:
            token = Path(user["tokenFile"]).read_text().strip()
        except OSError as e:
            raise ClusterError(f"kubeconfig {path}: cannot read tokenFile {user['tokenFile']}: {e.strerror}") from e
    plugin = next((k for k in ("exec", "auth-provider") if user.get(k)), None)
    if plugin and not token and not user.get("client-certificate") and not user.get("client-certificate-data"):
        # without this, every request would go out anonymous and come back 401 or 403, which hides the cause
        raise ClusterError(f"kubeconfig {path}: user {ctx.get('user')!r} gets its credentials from an {plugin} "
                           "plugin, which kwokbench does not run; use a kubeconfig with a token or a client "
                           "certificate (e.g. a ServiceAccount's token)")
    ca_file = _materialise(cluster, "certificate-authority", base, private=False)
    cert_file = _materialise(user, "client-certificate", base, private=False)
    key_file = _materialise(user, "client-key", base, private=True)
    written = tuple(f for f, entry, key in ((ca_file, cluster, "certificate-authority"),
                                            (cert_file, user, "client-certificate"), (key_file, user, "client-key"))
                    if f is not None and entry.get(f"{key}-data"))
    return Credentials(
        server=str(cluster.get("server", "")).rstrip("/"),
        ca_file=ca_file, cert_file=cert_file, key_file=key_file, token=token,
        insecure=bool(cluster.get("insecure-skip-tls-verify")), temporary=written,
    )
