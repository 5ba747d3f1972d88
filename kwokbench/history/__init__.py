"""Regression history over stored runs: an embedded index (:mod:`.index`) and a shared store (:mod:`.store`);
change points over its rows are :mod:`kwokbench.compare.detect`.

The run directories stay the source of truth; the index is a cache of their figures that can always be
rebuilt, and the detector reads rows of it, so both work offline on any copy of the runs.
"""
