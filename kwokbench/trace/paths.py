"""Where a scenario's trace file is: next to the scenario first, then in the shared traces folder.

Traces are inputs no one on the project wrote and the project ships none of them, so a scenario names
one relative to a traces folder that lives outside the repository: ``$KWOKBENCH_TRACES``, by default
``../shared/traces`` next to the project root (the directory holding the ``kwokbench`` package).
"""

from __future__ import annotations

import os
from pathlib import Path

from kwokbench.errors import ScenarioError

TRACES_ENV = "KWOKBENCH_TRACES"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def traces_dir() -> Path:
    return Path(os.environ.get(TRACES_ENV) or PROJECT_ROOT.parent / "shared" / "traces").expanduser()


def resolve(path_str: str, scenario_dir: Path) -> Path:
    """The existing file ``path_str`` names; not found anywhere is one error listing every place looked."""
    path = Path(path_str).expanduser()
    if path.is_absolute():
        places = [(path, "")]
    else:
        shared = f"${TRACES_ENV}" if os.environ.get(TRACES_ENV) else f"default traces folder, ${TRACES_ENV} unset"
        places = [(scenario_dir / path, " (scenario folder)"), (traces_dir() / path, f" ({shared})")]
    for place, _ in places:
        if place.is_file():
            return place
    raise ScenarioError(f"trace {path_str!r} not found; looked in: {', '.join(f'{p}{why}' for p, why in places)}")
