"""Volcano (``binary: volcano``): built from its pinned source archive, configured from the variant's ``volcano:``
block, started against the run's cluster as two processes, measured through its own ``/metrics``.

How it runs here, as Volcano's Helm chart deploys it minus what a kwokctl cluster does not need:

- **Build.** The module proxy serves every dependency of ``volcano.sh/volcano`` v1.15.1 but not the module itself,
  and ``volcano.sh/apis`` is replaced by ``./staging/src/volcano.sh/apis`` inside the archive, so it is built where it
  lies, in the extracted archive: ``go build ./cmd/scheduler`` (vc-scheduler) and ``./cmd/controller-manager``
  (vc-controller-manager, next to it) with the version stamped as its Makefile does (``pkg/version``). The CRDs of
  ``config/crd/volcano/bases`` and ``config/crd/jobflow/bases`` are copied next to the binaries.
- **Objects first.** Its CRDs are created (and waited for until served), then the variant's queues, as
  ``scheduling.volcano.sh/v1beta1`` Queue objects: the apiserver checks them against Volcano's own Queue schema, so
  an invalid queue is Volcano's own message, before any process starts.
- **Two processes**, each a process of the cluster (pid file, log; ``down``, the watchdog and Ctrl-C stop them):
  vc-controller-manager (its default controllers: the pg-controller gives every pod that names no PodGroup one of
  its own, minMember 1, and the queue-controller opens the queues) and vc-scheduler with the rendered
  ``volcano-scheduler.conf`` (the chart's default, or the variant's ``actions``/``tiers``, or its ``conf_file``).
  Both run without leader election; kwokctl's kube-scheduler is not started.
- **Readiness.** vc-scheduler opens its first session only once its informers have synced and every node of the
  initial list is in its cache (``WaitForHandlerSync``), so it is ready when both health checks answer and
  ``volcano_e2e_scheduling_latency_milliseconds_count`` is at least 1. A configuration Volcano refuses at start
  (it would log it and fall back to its built-in default) or a plugin it does not know (it would skip it every
  session) is its own log line, one line, exit 2, both processes stopped.
- **No admission webhooks.** vc-webhook-manager is not run (a kwokctl cluster has no Service network to reach it).
  What that skips, from its admission handlers: the Queue validation beyond the CRD schema (deserved ≥ guarantee,
  deserved ≤ capability, hierarchical queues' sums and depth, deleting a queue in use) and the Queue defaults
  (weight 1 and reclaimable: kwokbench writes both); the PodGroup mutation that takes the queue from the namespace's
  ``scheduling.volcano.sh/queue-name`` annotation and the check that a PodGroup's queue exists and is Open
  (kwokbench refuses, before any cluster, a workload naming a queue the variant does not create); the pod
  mutation by resource groups (none configured by default) and the pod checks of the ``volcano.sh/jdb-*``
  budget annotations; the vcjob defaults (the ``volcano-job`` template writes them) and the jobflow/cronjob/hypernode
  checks (kwokbench submits none of them).
- **Pods.** ``schedulerName: volcano`` and ``scheduling.volcano.sh/queue-name`` (the pg-controller copies it into
  the pod's PodGroup). A workload's ``gang:`` is one Volcano PodGroup per gang (builtin template
  ``volcano-podgroup``: minMember, queue, minResources = minMember × the pod's requests, as Volcano's job
  controller writes them), named by each member's ``scheduling.k8s.io/group-name`` annotation, so the pg-controller
  leaves its members alone and the gang plugin binds a gang only whole. A workload of Volcano Jobs (template
  ``volcano-job``, ``batch.volcano.sh/v1alpha1``) is submitted as Jobs in the workload's queue: the job controller
  makes their PodGroups and pods.
- **Its own account of a run**, from ``/metrics`` each second: sessions (``volcano_e2e_scheduling_latency``: one
  session opens a snapshot, runs the actions, closes it), the time per action and per plugin
  (``…_action_scheduling_latency``, ``…_plugin_scheduling_latency{plugin,OnSession}``), pods' latency from creation
  to each stage (``…_task_scheduling_latency{stage}``), PodGroups left unschedulable, and per queue its allocated,
  requested and deserved resources over time (``volcano_queue_*``, from the proportion plugin). Volcano v1.15.1
  observes all of them in milliseconds; the summary reports seconds. pprof is on (``--enable-pprof``).
"""


from __future__ import annotations

from kwokbench.components.volcano.build import (
    AGENT_CONF,
    AGENT_SOCKET,
    CRD_DIRS,
    MODULE,
    RECIPE,
    SOURCES,
    SUN_PATH_MAX,
    build_commands,
    copy_crds,
    socket_dir,
)
from kwokbench.components.volcano.figures import KEEP, volcano_rows, volcano_section
from kwokbench.components.volcano.kind import Volcano, fatal_line, refused_configuration
from kwokbench.components.volcano.settings import (
    DEFAULT_ACTIONS,
    DEFAULT_TIERS,
    GROUP_ANNOTATION,
    QUEUE_ANNOTATION,
    UNLIMITED_CLIENT,
    client_limits,
    gang_resources,
    queue_objects,
    scheduler_conf,
)

__all__ = ["AGENT_CONF", "AGENT_SOCKET", "CRD_DIRS", "DEFAULT_ACTIONS", "DEFAULT_TIERS", "GROUP_ANNOTATION", "KEEP",
           "MODULE", "QUEUE_ANNOTATION", "RECIPE", "SOURCES", "SUN_PATH_MAX", "UNLIMITED_CLIENT", "Volcano",
           "build_commands", "client_limits", "copy_crds", "fatal_line", "gang_resources", "queue_objects",
           "refused_configuration", "scheduler_conf", "socket_dir", "volcano_rows", "volcano_section"]
