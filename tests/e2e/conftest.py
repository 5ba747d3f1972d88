from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kwokbench.cluster import ClusterInfo, ClusterOptions, Kwokctl, NodeGroup, bring_up
from kwokbench.manifests import resolve_template
from kwokbench.toolchain import Toolchain

E2E_NODES = 100


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    """The real toolchain; built from Go modules the first time (cached afterwards)."""
    tc = Toolchain()
    tc.install("auto")
    return tc


@pytest.fixture(scope="session")
def kwokctl(toolchain: Toolchain, kb_home: Path) -> Kwokctl:
    return Kwokctl(toolchain, kb_home)


@pytest.fixture(scope="session")
def cluster(kwokctl: Kwokctl, request: pytest.FixtureRequest) -> Iterator[ClusterInfo]:
    """One real kwokctl cluster with 100 Ready nodes for the whole session."""
    groups = [NodeGroup("default", E2E_NODES, resolve_template("node"), {})]
    res = bring_up(kwokctl, ClusterOptions(name="e2e"), groups)
    yield res.cluster
    if not request.config.getoption("--keep-cluster"):
        kwokctl.delete("e2e")
