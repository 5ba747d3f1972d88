"""A Score plugin module for the e2e tests, written from plugins/nodenumber: as it is, or slowed (its Score spins
~0.2 ms before answering, ~20 ms of scheduler CPU per pod on 100 nodes). tests/e2e/test_action.py commits both into
a throwaway plugin repository; tests/e2e/test_bottleneck.py runs the slowed one to make the scheduler the limit
on a small cluster. The build cache is keyed by the module and its files' contents, so the slowed plugin is built
once for both."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.conftest import REPO

MODULE = "example.com/score"
CONFIG = REPO / "scenarios" / "configs" / "nodenumber.yaml"
"""A KubeSchedulerConfiguration that enables it (the plugin keeps nodenumber's Name, NodeNumber)."""
SLOW_SCORE = """// Score spins ~0.2 ms before answering: the slowdown a gate must catch.
func (NodeNumber) Score(_ context.Context, _ fwk.CycleState, p *v1.Pod, n fwk.NodeInfo) (int64, *fwk.Status) {
	deadline := time.Now().Add(200 * time.Microsecond)
	for time.Now().Before(deadline) {
	}
	return Rule(p.Name, n.Node().Name), nil
}
"""


def write_score_plugin(dest: Path, slow: bool = False) -> Path:
    """The plugin's module files in ``dest`` (created if needed); ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in ("go.mod", "go.sum", "nodenumber.go"):
        shutil.copy(REPO / "plugins" / "nodenumber" / f, dest / f)
    gomod = dest / "go.mod"
    gomod.write_text(gomod.read_text().replace("module kwokbench.local/plugins/nodenumber", f"module {MODULE}"))
    if slow:
        src = (dest / "nodenumber.go").read_text()
        fast = re.search(r"// Score is MatchScore.*?\n}\n", src, flags=re.S)
        assert fast is not None, "plugins/nodenumber changed: its Score is no longer found"
        (dest / "nodenumber.go").write_text(src.replace(fast.group(0), SLOW_SCORE).replace(
            'import (\n\t"context"\n', 'import (\n\t"context"\n\t"time"\n'))
    return dest
