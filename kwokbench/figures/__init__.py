"""A stored run's figures: each module derives one family of them from the run folder's tables.

The record side is :mod:`kwokbench.measure` (what a run writes while it runs); :mod:`.analyse` runs every
derivation here over one run folder. Nothing here talks to a cluster.
"""
