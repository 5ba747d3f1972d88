"""The labels kwokbench puts on every object of a run: the watch, the cleanup and the manifests agree on them."""

RUN_LABEL = "kwokbench.io/run"
"""The run an object belongs to (its value is the run's label, also in every object's name)."""
WORKLOAD_LABEL = "kwokbench.io/workload"
"""The scenario workload (phase) an object belongs to."""
NODE_GROUP_LABEL = "kwokbench.io/node-group"
"""The scenario node group a node (and its ResourceSlices) belongs to."""
GPU_DEMAND_ANNOTATION = "kwokbench.io/gpu-demand"
"""A DRA-form trace pod's GPUs and milli-GPUs (``"k,m"``, as its per-node requests would be): read by the
analysis only (allocation against arrival, pod classes); the scheduler sees the pod's claim."""
