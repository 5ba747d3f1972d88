"""The typer layer: parse arguments, call the core, render. No logic lives here.

A module per help panel (:mod:`.tools`, :mod:`.clusters`, :mod:`.runs`, :mod:`.analysis`, :mod:`.history`),
each registering its commands on :data:`kwokbench.cli.app.app`. Heavy imports (pandas, aiohttp, the kubernetes
client) happen inside commands so ``--help`` is instant. A :class:`~kwokbench.errors.KwokbenchError` becomes one
line on stderr and its exit code.
"""

from __future__ import annotations

# isort: off
# each registers its commands, in the order of the data flow, which --help and the reference keep
from kwokbench.cli import clusters  # noqa: F401
from kwokbench.cli import runs  # noqa: F401
from kwokbench.cli import analysis  # noqa: F401
from kwokbench.cli import history  # noqa: F401
from kwokbench.cli import tools  # noqa: F401
# isort: on
from kwokbench.cli.app import app, parse_params

__all__ = ["app", "parse_params"]
