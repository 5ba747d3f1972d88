"""Real traces to replay: kwokbench's own trace format, importers, inflation, anonymisation.

Pure logic over files and frozen dataclasses. The package imports nothing of kwokbench above
``kwokbench.errors`` (no scenario, runner or cluster), so scenarios and the runner can build on it
without an import cycle and every function here is testable on a few synthetic rows.
"""
