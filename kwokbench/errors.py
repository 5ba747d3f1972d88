"""One error hierarchy for everything the user can get wrong or the environment can refuse.

The CLI turns a ``KwokbenchError`` into one line on stderr and its ``exit_code`` (2: bad input or a
refusing environment); anything else is a bug and keeps its traceback. A gate's verdicts are data, not
errors: ``GateResult.exit_code`` gives 0 pass, 1 regression, 3 inconclusive.
"""

from __future__ import annotations


class KwokbenchError(Exception):
    """Base of all expected failures; ``str(err)`` is the single line shown to the user."""

    exit_code = 2


class ScenarioError(KwokbenchError):
    """A scenario, template or override is invalid."""


class ToolchainError(KwokbenchError):
    """A binary is missing, broken, or could not be built."""


class ClusterError(KwokbenchError):
    """kwokctl or a cluster component failed, or a cluster name is taken/unknown."""


class ApiError(KwokbenchError):
    """The Kubernetes API answered with an unexpected error."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class StoreError(KwokbenchError):
    """A run directory is unreadable, of an unknown format version, or not writable."""
