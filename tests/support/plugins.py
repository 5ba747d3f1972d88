"""A Score plugin module for the e2e tests, written from plugins/nodenumber: as it is, or slowed (its Score spins
a given time per node before answering). tests/e2e/test_action.py commits it and a modestly slowed one (MODEST:
~1 ms more scheduler CPU per pod on 100 nodes, about +30%) into a throwaway plugin repository; test_bottleneck.py
and test_duet.py run the much slower one (SLOW: ~20 ms per pod) to make the scheduler the limit on a small cluster.
The build cache is keyed by the module and its files' contents, so each is built once for all
(tests/support/prebuild.py builds every one of SPINS)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.conftest import REPO

MODULE = "example.com/score"
CONFIG = REPO / "scenarios" / "configs" / "nodenumber.yaml"
"""A KubeSchedulerConfiguration that enables it (the plugin keeps nodenumber's Name, NodeNumber)."""
SLOW = 200
"""Microseconds a slowed Score spins per node: ~20 ms of scheduler CPU per pod on 100 nodes, the limit there."""
MODEST = 10
"""Microseconds of a modest slowdown: ~1 ms per pod on 100 nodes, about +30% of the plugin's scheduler CPU per pod."""
SPINS = (0, MODEST, SLOW)
"""Every plugin the tests write (prebuild builds each)."""
SPIN_SCORE = """// Score spins {us} µs per node before answering: the slowdown a gate must catch.
func (NodeNumber) Score(_ context.Context, _ fwk.CycleState, p *v1.Pod, n fwk.NodeInfo) (int64, *fwk.Status) {{
	deadline := time.Now().Add({us} * time.Microsecond)
	for time.Now().Before(deadline) {{
	}}
	return Rule(p.Name, n.Node().Name), nil
}}
"""


def write_score_plugin(dest: Path, spin_us: int = 0) -> Path:
    """The plugin's module files in ``dest`` (created if needed), its Score spinning ``spin_us`` µs per node;
    ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in ("go.mod", "go.sum", "nodenumber.go"):
        shutil.copy(REPO / "plugins" / "nodenumber" / f, dest / f)
    gomod = dest / "go.mod"
    gomod.write_text(gomod.read_text().replace("module kwokbench.local/plugins/nodenumber", f"module {MODULE}"))
    if spin_us:
        src = (dest / "nodenumber.go").read_text()
        fast = re.search(r"// Score is MatchScore.*?\n}\n", src, flags=re.S)
        assert fast is not None, "plugins/nodenumber changed: its Score is no longer found"
        (dest / "nodenumber.go").write_text(src.replace(fast.group(0), SPIN_SCORE.format(us=spin_us)).replace(
            'import (\n\t"context"\n', 'import (\n\t"context"\n\t"time"\n'))
    return dest
