package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// The gpufilter rule's table (plugins/gpufilter/testdata/cases.json), the one the native plugin's
// test reads, run through this host against the guest in plugins/gpufilter-wasm: same codes, same
// reasons, same scores. (The native plugin is not imported: a test dependency of this module would
// become a requirement of every scheduler build that wraps it.)

const (
	workloadTypeLabel = "workload-type"
	gpuIntensive      = "GPU-intensive"
	cpuIntensive      = "CPU-intensive"
)

type gpuCases struct {
	Filter []struct {
		Name, WorkloadType, CPU, GPUs, Want, Reason string
	}
	Score []struct {
		Name, WorkloadType, CPU, GPUs string
		Want                          int64
	}
}

func loadGPUCases(t *testing.T) gpuCases {
	var c gpuCases
	b, err := os.ReadFile(filepath.Join("..", "gpufilter", "testdata", "cases.json"))
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || len(c.Filter) == 0 || len(c.Score) == 0 {
		t.Fatalf("../gpufilter/testdata/cases.json: %v", err)
	}
	return c
}

func gpuNode(cpu, gpus string) *v1.Node {
	alloc := v1.ResourceList{}
	if cpu != "" {
		alloc[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if gpus != "" {
		alloc[GPUResource] = resource.MustParse(gpus)
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: alloc}}
}

func gpuPod(workloadType string) *v1.Pod {
	labels := map[string]string{}
	if workloadType != "" {
		labels[workloadTypeLabel] = workloadType
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels}}
}

var codes = map[string]fwk.Code{"Success": fwk.Success, "UnschedulableAndUnresolvable": fwk.UnschedulableAndUnresolvable}

func TestGPUFilterGuestFilter(t *testing.T) {
	for _, trusted := range []bool{false, true} { // a trusted guest (no deadline) answers the same
		t.Run(fmt.Sprintf("trusted=%v", trusted), func(t *testing.T) { testGPUFilter(t, trusted) })
	}
}

func testGPUFilter(t *testing.T, trusted bool) {
	a := testArgs(gpufilterGuest(t))
	a.Trusted = trusted
	p := newTestPlugin(t, a)
	if p.caps != capFilter|capScore || p.ScoreExtensions() != nil {
		t.Fatalf("capabilities %b", p.caps)
	}
	if trusted && p.timeout != 0 {
		t.Fatalf("a trusted guest has no call deadline, got %v", p.timeout)
	}
	for _, c := range loadGPUCases(t).Filter {
		t.Run(c.Name, func(t *testing.T) {
			want, ok := codes[c.Want]
			if !ok {
				t.Fatalf("unknown code %q", c.Want)
			}
			pod, ni := gpuPod(c.WorkloadType), nodeInfo{node: gpuNode(c.CPU, c.GPUs)}
			state := newState()
			if _, st := p.PreFilter(context.Background(), state, pod, nil); !st.IsSuccess() {
				t.Fatalf("PreFilter = %v", st)
			}
			got := p.Filter(context.Background(), state, pod, ni)
			if got.Code() != want || got.Message() != c.Reason {
				t.Fatalf("Filter = %v %q, want %v %q", got.Code(), got.Message(), want, c.Reason)
			}
		})
	}
}

func TestGPUFilterGuestScore(t *testing.T) {
	p := newTestPlugin(t, testArgs(gpufilterGuest(t)))
	for _, c := range loadGPUCases(t).Score {
		t.Run(c.Name, func(t *testing.T) {
			pod, ni := gpuPod(c.WorkloadType), nodeInfo{node: gpuNode(c.CPU, c.GPUs)}
			state := newState()
			if st := p.PreScore(context.Background(), state, pod, nil); !st.IsSuccess() {
				t.Fatalf("PreScore = %v", st)
			}
			if v, st := p.Score(context.Background(), state, pod, ni); !st.IsSuccess() || v != c.Want {
				t.Fatalf("Score = %d, %v; want %d", v, st, c.Want)
			}
		})
	}
}

// The scheduler calls Filter from 16 goroutines; a pool of 4 instances serves them all, correctly.
func TestGPUFilterGuestConcurrent(t *testing.T) {
	a := testArgs(gpufilterGuest(t))
	a.PoolSize = 4
	p := newTestPlugin(t, a)
	nodes := benchNodes(200)
	pods := []*v1.Pod{gpuPod(gpuIntensive), gpuPod(cpuIntensive), gpuPod("")}
	// benchNodes: every fifth node has GPUs; every node has >= 32 CPUs
	fits := func(pod *v1.Pod, i int) bool { return pod.Labels[workloadTypeLabel] != gpuIntensive || i%5 == 0 }
	var wg sync.WaitGroup
	for _, pod := range pods {
		state := newState()
		if _, st := p.PreFilter(context.Background(), state, pod, nil); !st.IsSuccess() {
			t.Fatal(st)
		}
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(nodes); i += 16 {
					got := p.Filter(context.Background(), state, pod, nodeInfo{node: nodes[i]})
					if got.IsSuccess() != fits(pod, i) {
						t.Errorf("node %s, pod %v: %v", nodes[i].Name, pod.Labels, got)
					}
				}
			}()
		}
	}
	wg.Wait()
	if s := p.pool.stats(); s.created > 4 || s.discarded != 0 {
		t.Fatalf("pool: %+v", s)
	}
}
