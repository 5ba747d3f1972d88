// Package gpufilter is an out-of-tree kube-scheduler plugin: the classic custom Filter example.
//
// Pods labelled workload-type=GPU-intensive fit only nodes with allocatable nvidia.com/gpu;
// pods labelled workload-type=CPU-intensive need a node with at least 2000m allocatable CPU.
// Score keeps GPU nodes for GPU work: GPU-intensive pods prefer GPU nodes, every other pod prefers
// nodes without GPUs.
//
// kwokbench compiles it into a kube-scheduler with
//
//	kwokbench tools build-scheduler plugins/gpufilter
//
// which needs this package to export Name and New (a frameworkruntime.PluginFactory).
package gpufilter

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Name is the plugin name used in KubeSchedulerConfiguration profiles.
const Name = "GPUWorkloadFilter"

const (
	// WorkloadTypeLabel is the pod label the rule reads.
	WorkloadTypeLabel = "workload-type"
	GPUIntensive      = "GPU-intensive"
	CPUIntensive      = "CPU-intensive"
	// GPUResource is the extended resource GPU nodes advertise.
	GPUResource v1.ResourceName = "nvidia.com/gpu"
)

// MinCPUForCPUIntensive is the allocatable CPU a node needs to host a CPU-intensive pod.
var MinCPUForCPUIntensive = resource.MustParse("2000m")

// GPUWorkloadFilter implements Filter and Score.
type GPUWorkloadFilter struct{}

var (
	_ fwk.FilterPlugin = GPUWorkloadFilter{}
	_ fwk.ScorePlugin  = GPUWorkloadFilter{}
)

// New is the plugin factory.
func New(_ context.Context, _ runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	return GPUWorkloadFilter{}, nil
}

// Name returns the plugin name.
func (GPUWorkloadFilter) Name() string { return Name }

func hasGPU(node *v1.Node) bool {
	q, ok := node.Status.Allocatable[GPUResource]
	return ok && !q.IsZero()
}

// Fits is the rule itself, shared by Filter and the tests: "" when the pod may run on the node,
// otherwise the reason it may not.
func Fits(pod *v1.Pod, node *v1.Node) string {
	switch pod.Labels[WorkloadTypeLabel] {
	case GPUIntensive:
		if !hasGPU(node) {
			return "GPU-intensive pod needs a node with nvidia.com/gpu"
		}
	case CPUIntensive:
		if node.Status.Allocatable.Cpu().Cmp(MinCPUForCPUIntensive) < 0 {
			return "CPU-intensive pod needs a node with at least 2000m allocatable CPU"
		}
	}
	return ""
}

// Filter rejects nodes that break the rule. Node allocatable does not change while the pod waits,
// so the rejection is UnschedulableAndUnresolvable (preemption cannot help).
func (GPUWorkloadFilter) Filter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	node := ni.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	if reason := Fits(pod, node); reason != "" {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	return nil
}

// Score keeps GPU nodes free for GPU work.
func (GPUWorkloadFilter) Score(_ context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	return NodeScore(pod, ni.Node()), nil
}

// NodeScore is MaxNodeScore when the node's kind matches the pod's, 0 otherwise.
func NodeScore(pod *v1.Pod, node *v1.Node) int64 {
	if node == nil {
		return 0
	}
	if (pod.Labels[WorkloadTypeLabel] == GPUIntensive) == hasGPU(node) {
		return fwk.MaxNodeScore
	}
	return 0
}

// ScoreExtensions is nil: scores are already in [0, MaxNodeScore].
func (GPUWorkloadFilter) ScoreExtensions() fwk.ScoreExtensions { return nil }
