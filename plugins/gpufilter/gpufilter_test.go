package gpufilter

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// nodeInfo is the part of fwk.NodeInfo the plugin uses; calling anything else panics.
type nodeInfo struct {
	fwk.NodeInfo
	node *v1.Node
}

func (n nodeInfo) Node() *v1.Node { return n.node }

func node(cpu string, gpus string) *v1.Node {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	if gpus != "" {
		alloc[GPUResource] = resource.MustParse(gpus)
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: alloc}}
}

func pod(workloadType string) *v1.Pod {
	labels := map[string]string{}
	if workloadType != "" {
		labels[WorkloadTypeLabel] = workloadType
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels}}
}

func TestFilter(t *testing.T) {
	cases := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want fwk.Code
	}{
		{"gpu pod on gpu node", pod(GPUIntensive), node("32", "8"), fwk.Success},
		{"gpu pod on cpu node", pod(GPUIntensive), node("32", ""), fwk.UnschedulableAndUnresolvable},
		{"gpu pod on node with zero gpus", pod(GPUIntensive), node("32", "0"), fwk.UnschedulableAndUnresolvable},
		{"cpu pod on big node", pod(CPUIntensive), node("2", ""), fwk.Success},
		{"cpu pod on small node", pod(CPUIntensive), node("1500m", ""), fwk.UnschedulableAndUnresolvable},
		{"cpu pod on big gpu node", pod(CPUIntensive), node("64", "8"), fwk.Success},
		{"unlabelled pod anywhere", pod(""), node("100m", ""), fwk.Success},
		{"other label value", pod("batch"), node("100m", ""), fwk.Success},
	}
	p, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := p.(fwk.FilterPlugin)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := f.Filter(context.Background(), nil, c.pod, nodeInfo{node: c.node})
			if got.Code() != c.want {
				t.Fatalf("Filter = %v (%q), want %v", got.Code(), got.Message(), c.want)
			}
			if c.want != fwk.Success && got.Message() == "" {
				t.Fatal("a rejection must say why")
			}
		})
	}
}

func TestFilterWithoutNode(t *testing.T) {
	got := GPUWorkloadFilter{}.Filter(context.Background(), nil, pod(GPUIntensive), nodeInfo{})
	if got.Code() != fwk.Error {
		t.Fatalf("Filter without a node = %v, want Error", got.Code())
	}
}

func TestScoreKeepsGPUNodesForGPUWork(t *testing.T) {
	s := GPUWorkloadFilter{}
	gpu, cpu := nodeInfo{node: node("64", "8")}, nodeInfo{node: node("64", "")}
	score := func(p *v1.Pod, n nodeInfo) int64 {
		v, st := s.Score(context.Background(), nil, p, n)
		if !st.IsSuccess() {
			t.Fatalf("Score failed: %v", st)
		}
		return v
	}
	if score(pod(GPUIntensive), gpu) <= score(pod(GPUIntensive), cpu) {
		t.Fatal("a GPU-intensive pod must prefer a GPU node")
	}
	if score(pod(CPUIntensive), cpu) <= score(pod(CPUIntensive), gpu) {
		t.Fatal("a CPU-intensive pod must prefer a node without GPUs")
	}
	if score(pod(""), cpu) != fwk.MaxNodeScore || score(pod(""), gpu) != 0 {
		t.Fatal("an unlabelled pod must prefer nodes without GPUs")
	}
	if s.Name() != Name || s.ScoreExtensions() != nil {
		t.Fatal("unexpected Name or ScoreExtensions")
	}
}
