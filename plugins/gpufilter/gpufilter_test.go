package gpufilter

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
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
	alloc := v1.ResourceList{}
	if cpu != "" {
		alloc[v1.ResourceCPU] = resource.MustParse(cpu)
	}
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

// cases is the rule's test table, shared with the WASM guest's test (plugins/wasm/gpufilter_test.go).
type cases struct {
	Filter []struct {
		Name, WorkloadType, CPU, GPUs, Want, Reason string
	}
	Score []struct {
		Name, WorkloadType, CPU, GPUs string
		Want                          int64
	}
}

func loadCases(t *testing.T) cases {
	var c cases
	b, err := os.ReadFile("testdata/cases.json")
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || len(c.Filter) == 0 || len(c.Score) == 0 {
		t.Fatalf("testdata/cases.json: %v", err)
	}
	return c
}

var codes = map[string]fwk.Code{"Success": fwk.Success, "UnschedulableAndUnresolvable": fwk.UnschedulableAndUnresolvable}

func TestFilter(t *testing.T) {
	p, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := p.(fwk.FilterPlugin)
	for _, c := range loadCases(t).Filter {
		t.Run(c.Name, func(t *testing.T) {
			want, ok := codes[c.Want]
			if !ok {
				t.Fatalf("unknown code %q", c.Want)
			}
			got := f.Filter(context.Background(), nil, pod(c.WorkloadType), nodeInfo{node: node(c.CPU, c.GPUs)})
			if got.Code() != want {
				t.Fatalf("Filter = %v (%q), want %v", got.Code(), got.Message(), want)
			}
			if got.Message() != c.Reason {
				t.Fatalf("Filter says %q, want %q", got.Message(), c.Reason)
			}
		})
	}
}

func TestScore(t *testing.T) {
	s := GPUWorkloadFilter{}
	for _, c := range loadCases(t).Score {
		t.Run(c.Name, func(t *testing.T) {
			v, st := s.Score(context.Background(), nil, pod(c.WorkloadType), nodeInfo{node: node(c.CPU, c.GPUs)})
			if !st.IsSuccess() || v != c.Want {
				t.Fatalf("Score = %d, %v; want %d", v, st, c.Want)
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

// The native side of plugins/wasm's benchmarks (benchmarks/bench_wasm_plugin.py prints them side by
// side): one scheduling cycle's Filter or Score over 1 and 500 nodes, per call. benchNodes and
// benchPod are the same as in plugins/wasm/bench_test.go.

func benchNodes(n int) []fwk.NodeInfo {
	out := make([]fwk.NodeInfo, n)
	for i := range out {
		name := fmt.Sprintf("kwok-node-%d", i)
		labels := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
			"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3),
			"type": "kwok", "node.kubernetes.io/instance-type": "m5.8xlarge"}
		alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("64Gi"),
			v1.ResourcePods: resource.MustParse("110")}
		var taints []v1.Taint
		if i%5 == 0 {
			alloc[v1.ResourceCPU], alloc[GPUResource] = resource.MustParse("64"), resource.MustParse("8")
			taints = []v1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}}
		}
		out[i] = nodeInfo{node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: v1.NodeSpec{Taints: taints}, Status: v1.NodeStatus{Allocatable: alloc}}}
	}
	return out
}

func benchPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{
		"app": "trainer", WorkloadTypeLabel: GPUIntensive, "pod-template-hash": "5d8f7c9b6d"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
}

// perCall reports ns, allocations and bytes per extension-point call.
func perCall(b *testing.B, calls int, cycle func()) {
	cycle()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		cycle()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(b.N * calls)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/call")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/call")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/call")
}

func BenchmarkFilter(b *testing.B) {
	ctx, pod, f := context.Background(), benchPod(), GPUWorkloadFilter{}
	for _, n := range []int{1, 500} {
		nodes := benchNodes(n)
		b.Run(fmt.Sprintf("native/nodes=%d", n), func(b *testing.B) {
			perCall(b, n, func() {
				for _, ni := range nodes {
					f.Filter(ctx, nil, pod, ni)
				}
			})
		})
	}
}

func BenchmarkScore(b *testing.B) {
	ctx, pod, f := context.Background(), benchPod(), GPUWorkloadFilter{}
	for _, n := range []int{1, 500} {
		nodes := benchNodes(n)
		b.Run(fmt.Sprintf("native/nodes=%d", n), func(b *testing.B) {
			perCall(b, n, func() {
				for _, ni := range nodes {
					f.Score(ctx, nil, pod, ni)
				}
			})
		})
	}
}
