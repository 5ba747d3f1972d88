"""Kueue in front of the scheduler: its build (:mod:`.build`), its install and process on the cluster
(:mod:`.cluster`), the run's component (:mod:`.component`) and the record of its Workloads (:mod:`.measure`)."""
