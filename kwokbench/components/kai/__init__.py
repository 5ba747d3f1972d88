"""NVIDIA KAI-Scheduler (``binary: kai``): built from its pinned source, its queues created from the variant's
``kai:`` block, its processes started against the run's cluster, measured through the scheduler's /metrics.

How it runs here, as KAI's operator deploys it minus what a kwokctl cluster does not need:

- **Processes.** A pod is scheduled and bound by several processes, each one more component of the cluster
  (pid file, log; ``down``, the watchdog and Ctrl-C stop them like kwokctl's): the **podgrouper** makes a
  PodGroup for every pod of ``schedulerName: kai-scheduler`` that has none (one per bare pod, one per Job) and
  annotates the pod with it; the **scheduler** places pod groups once per ``schedule_period`` (a session:
  its actions, each consulting its plugins) and writes a BindRequest per pod; the **binder** binds the pod that
  BindRequest names. The **queuecontroller** and **podgroupcontroller** (``status_controllers``, on by default as
  KAI deploys them) keep Queue and PodGroup status (allocated, requested) current; the scheduler does not read
  it. KAI's admission webhooks and operator are not run: kwokbench writes what the webhooks would (the queue
  label, schedulerName), and a kwokctl cluster has no Service network to reach a webhook. Every process reads
  ``KUBECONFIG`` from its environment (the queue and pod-group controllers read their configuration before they
  parse ``-kubeconfig``).
- **Configuration.** Queues are ``scheduling.run.ai/v2`` Queue objects created before the scheduler starts
  (``queues``; KAI's installation defaults, ``default-parent-queue`` and its leaf ``default-queue``, when none
  are given); CPU in cores and memory as quantities are written in KAI's units (millicpus, megabytes). The
  scheduler's actions and plugins come from ``--scheduler-conf``: the variant's ``config`` (or ``config_file``),
  else KAI's built-in default (``pkg/scheduler/conf_util``). Client limits are unlimited like kube-scheduler's
  unless ``cluster.qps_limits`` (then KAI's own, 50/300) or ``client_qps``.
- **Readiness.** The scheduler serves no health endpoint; it is ready once its /metrics answers and it has run a
  session — it runs none before its informers synced — and, when its ``snapshot`` plugin is on (KAI's default
  configuration), its cache holds every node of the scenario (``/get-snapshot`` on its plugin server).
- **Gangs.** A workload's ``gang:`` becomes KAI PodGroups (``kai-podgroup`` template: minMember, queue) created
  before its pods, each member annotated ``pod-group-name: <its PodGroup>`` (the podgrouper leaves a bare pod
  that has one alone, ``pkg/podgrouper/pod_controller.go``).
- **Build.** ``kwokbench tools install kai`` builds ``./cmd/scheduler`` and the four other commands from the
  pinned archive (every dependency from the module proxy), version stamped as KAI's Makefile does, the CRDs of
  ``deployments/kai-scheduler/crds`` copied beside them.
- **Its own account of a run** (summary ``kai``, from the scheduler's /metrics): pod scheduling latency (pod
  created → BindRequest written) and the BindRequest write, both histograms in milliseconds; session, action
  and plugin durations (gauges of the last session, sampled once a second); pod groups scheduled and acted on
  per action; preemption attempts; each queue's fair share over time. The binder's, podgrouper's and
  controllers' /metrics are scraped raw into the run directory too; their CPU is in the summary's processes.
"""


from __future__ import annotations

from kwokbench.components.kai.build import RECIPE, build_commands, crd_files, fatal_line
from kwokbench.components.kai.figures import KEEP, kai_rows, kai_section
from kwokbench.components.kai.kind import Kai, snapshot_nodes
from kwokbench.components.kai.settings import (
    MODULE,
    POD_GROUP_ANNOTATION,
    QUEUE_LABEL,
    SOURCES,
    UNLIMITED_CLIENT,
    KaiConfig,
    KaiResources,
    KaiSpec,
    client_limits,
    has_snapshot_plugin,
    queue_objects,
    scheduler_config,
)

__all__ = ["KEEP", "MODULE", "POD_GROUP_ANNOTATION", "QUEUE_LABEL", "RECIPE", "SOURCES", "UNLIMITED_CLIENT", "Kai",
           "KaiConfig", "KaiResources", "KaiSpec", "build_commands", "client_limits", "crd_files", "fatal_line",
           "has_snapshot_plugin", "kai_rows", "kai_section", "queue_objects", "scheduler_config", "snapshot_nodes"]
