"""The labels kwokbench puts on every object of a run: the watch, the cleanup and the manifests agree on them."""

RUN_LABEL = "kwokbench.io/run"
"""The run an object belongs to (its value is the run's label, also in every object's name)."""
WORKLOAD_LABEL = "kwokbench.io/workload"
"""The scenario workload (phase) an object belongs to."""
NODE_GROUP_LABEL = "kwokbench.io/node-group"
"""The scenario node group a node (and its ResourceSlices) belongs to."""
