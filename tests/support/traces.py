"""The real traces, or a stand-in of the same columns for a checkout that has none beside it.

The project ships no production trace (``../shared/traces/README.md``): a clone of the repository alone has no
``../shared/traces``. Tests that check what a shipped scenario *is* (it loads, its rows are catalogued) read the
stand-in under ``tests/support/traces/`` (the same file names and columns, six nodes and twelve pods); tests whose
figures are the real trace's (the FGD typical pods, the 1523-node replays) say what they need and skip.
"""

from __future__ import annotations

import os
from pathlib import Path

from kwokbench.trace.paths import TRACES_ENV, traces_dir

STAND_IN = Path(__file__).resolve().parent / "traces"
REAL = traces_dir()
"""Where the real traces are looked for: ``$KWOKBENCH_TRACES``, by default ``../shared/traces``."""
ALIBABA = REAL / "alibaba-gpu-2023"
# not the stand-in: a pytest-xdist worker inherits the variable use_stand_in_without_the_real_trace() set in the
# controller, so there REAL is the stand-in (a cold run in a clone alone read its 12 pods as the real trace)
HAVE_ALIBABA = (ALIBABA / "openb_pod_list_default.csv").is_file() and REAL.resolve() != STAND_IN
NEEDS_ALIBABA = ("needs the Alibaba GPU trace (cluster-trace-gpu-v2023, github.com/alibaba/clusterdata), not shipped: "
                 f"set {TRACES_ENV} to a folder holding alibaba-gpu-2023/, or put it in ../shared/traces "
                 "(docs/guides/traces.md#where-the-trace-files-come-from)")


def use_stand_in_without_the_real_trace() -> None:
    """Point this session (and the kwokbench processes it starts) at the stand-in when the real trace is absent."""
    if not HAVE_ALIBABA:
        os.environ[TRACES_ENV] = str(STAND_IN)
