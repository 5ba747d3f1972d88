"""kwokbench's builtin scheduler extender: its HTTP server (:mod:`.server`), its process beside a run's
cluster (:mod:`.process`), the variant's component (:mod:`.component`) and its own counts (:mod:`.measure`)."""
