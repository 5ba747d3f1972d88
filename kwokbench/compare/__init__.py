"""Comparing stored runs: the statistics (:mod:`.stats`), the gate's verdicts (:mod:`.gate`) and the
change-point test of a history (:mod:`.detect`). Pure: run folders and rows in, decisions out."""
