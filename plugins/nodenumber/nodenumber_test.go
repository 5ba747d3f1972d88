package nodenumber

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

func TestRule(t *testing.T) {
	for _, c := range []struct {
		pod, node string
		want      int64
	}{
		{"pods-a-13", "kb-cpu-3", MatchScore},
		{"pods-a-13", "kb-cpu-23", MatchScore},
		{"pods-a-13", "kb-cpu-4", 0},
		{"pods-a-13", "kb-cpu-x", 0},
		{"pod-x", "kb-cpu-4", MatchScore}, // no digit: every node alike
		{"", "kb-cpu-4", MatchScore},
	} {
		if got := Rule(c.pod, c.node); got != c.want {
			t.Errorf("Rule(%q, %q) = %d, want %d", c.pod, c.node, got, c.want)
		}
	}
}

// nodeInfo is the part of fwk.NodeInfo the plugin uses; calling anything else panics.
type nodeInfo struct {
	fwk.NodeInfo
	node *v1.Node
}

func (n nodeInfo) Node() *v1.Node { return n.node }

// BenchmarkScore is one Score cycle over 1 and 500 nodes, per call, in the shape of plugins/wasm's
// BenchmarkNodeNumber (benchmarks/bench_wasm_extension.py prints them side by side).
func BenchmarkScore(b *testing.B) {
	ctx, pl := context.Background(), NodeNumber{}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pods-x-3", Namespace: "default"}}
	for _, n := range []int{1, 500} {
		nodes := make([]nodeInfo, n)
		for i := range nodes {
			nodes[i] = nodeInfo{node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kwok-node-%d", i)}}}
		}
		b.Run(fmt.Sprintf("native/nodes=%d", n), func(b *testing.B) {
			b.ResetTimer()
			for range b.N {
				for _, ni := range nodes {
					if _, st := pl.Score(ctx, nil, pod, ni); !st.IsSuccess() {
						b.Fatal(st)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
		})
	}
}
