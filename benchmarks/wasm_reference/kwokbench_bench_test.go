// kwokbench's plugin-level benchmark of the reference WASM extension (kubernetes-sigs/kube-scheduler-wasm-extension),
// in the shape of plugins/wasm's BenchmarkNodeNumber: one Score cycle (PreScore, then Score on every node) over 1 and
// 500 kwok-like nodes, reported per call. benchmarks/bench_wasm_extension.py copies this file into the pinned source's
// internal/e2e/scheduler (it needs the reference's own test helpers and go.mod) and runs it there; this file is
// kwokbench's, none of the reference's code is copied into the repository.
package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	k8stest "k8s.io/klog/v2/test"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	wasm "sigs.k8s.io/kube-scheduler-wasm-extension/scheduler/plugin"
	"sigs.k8s.io/kube-scheduler-wasm-extension/scheduler/test"
)

// kwokNodes mirror plugins/wasm's benchNodes: six labels each, 32 CPUs.
func kwokNodes(n int) []*framework.NodeInfo {
	out := make([]*framework.NodeInfo, n)
	for i := range out {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3), "type": "kwok",
			"node.kubernetes.io/instance-type": "m5.8xlarge"}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"),
				v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110")}}}
		ni := framework.NewNodeInfo()
		ni.SetNode(node)
		out[i] = ni
	}
	return out
}

// perCall is plugins/wasm's: figures per extension-point call, Go heap allocations of the host.
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

// BenchmarkKwokbenchNodeNumber: the reference's prebuilt nodenumber guest (TinyGo) on the reference's host, quiet
// (logSeverity 3, as its own "Simple" benchmark) and as shipped (logSeverity 0: it logs every call and records an
// Event per PreScore; the log goes to io.Discard, its formatting is counted).
func BenchmarkKwokbenchNodeNumber(b *testing.B) {
	fs := k8stest.InitKlog(b)
	_ = fs.Set("skip_headers", "true")
	klog.SetOutput(io.Discard)
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pods-x-3", Namespace: "default", UID: "u-3"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"),
				v1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	for _, n := range []int{1, 500} {
		nis := kwokNodes(n)
		for _, v := range []struct {
			name     string
			severity int32
		}{{"reference", 3}, {"reference-logging", 0}} {
			b.Run(fmt.Sprintf("%s/nodes=%d", v.name, n), func(b *testing.B) {
				p, err := wasm.NewFromConfig(ctx, "wasm", wasm.PluginConfig{GuestURL: test.URLExampleNodeNumber,
					LogSeverity: v.severity}, &test.FakeHandle{Recorder: &test.FakeRecorder{}})
				if err != nil {
					b.Fatal(err)
				}
				defer p.(io.Closer).Close()
				pre, score := p.(framework.PreScorePlugin), p.(framework.ScorePlugin)
				cycle := func() (matched int) {
					state := framework.NewCycleState()
					if st := pre.PreScore(ctx, state, pod, nis); !st.IsSuccess() {
						b.Fatal(st)
					}
					for _, ni := range nis {
						s, st := score.Score(ctx, state, pod, ni)
						if !st.IsSuccess() {
							b.Fatal(st)
						}
						if s == 10 {
							matched++
						}
					}
					return matched
				}
				if got, want := cycle(), n/10; got != want { // the rule: the nodes whose name ends in 3
					b.Fatalf("%d nodes scored 10, want %d", got, want)
				}
				perCall(b, n, func() { cycle() })
			})
		}
	}
}
