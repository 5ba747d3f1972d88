package wasm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

var buildDir string

func TestMain(m *testing.M) {
	klog.SetLogger(logr.Discard()) // the plugin logs each guest it loads; keep test and benchmark output clean
	dir, err := os.MkdirTemp("", "kwokbench-wasm-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	buildDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// buildGuest compiles the guest package in dir with the standard Go toolchain for wasip1, once per
// test binary (the Go build cache makes later runs quick).
func buildGuest(tb testing.TB, dir string, flags ...string) string {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := dir + "\x00" + strings.Join(flags, "\x00")
	if path, ok := built[key]; ok {
		return path
	}
	out := filepath.Join(buildDir, fmt.Sprintf("guest-%d.wasm", len(built)))
	cmd := exec.Command("go", append(append([]string{"build", "-o", out}, flags...), ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building the guest in %s: %v\n%s", dir, err, b)
	}
	tb.Logf("built %s %v in %v", dir, flags, time.Since(start).Round(time.Millisecond))
	built[key] = out
	return out
}

// testGuest builds a guest from testdata/guests, as a reactor, with its mode variable set.
func testGuest(tb testing.TB, pkg, mode string) string {
	flags := []string{"-buildmode=c-shared"}
	if mode != "" {
		flags = append(flags, "-ldflags=-X=main."+mode)
	}
	return buildGuest(tb, filepath.Join("testdata", "guests", pkg), flags...)
}

func gpufilterGuest(tb testing.TB) string {
	return buildGuest(tb, filepath.Join("..", "gpufilter-wasm"), "-buildmode=c-shared")
}

func writeWasm(tb testing.TB, m wasmModule) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "hand.wasm")
	if err := os.WriteFile(path, m.bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func testArgs(guestURL string) Args {
	return Args{GuestURL: guestURL, CallTimeout: metav1.Duration{Duration: 2 * time.Second}, PoolSize: 4}
}

func newTestPlugin(tb testing.TB, a Args) *Plugin {
	tb.Helper()
	p, err := tryPlugin(a)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

func tryPlugin(a Args) (*Plugin, error) {
	if err := a.complete(); err != nil {
		return nil, err
	}
	return newPlugin(context.Background(), a)
}

// cycleState is the part of fwk.CycleState the plugin uses; anything else panics.
type cycleState struct {
	fwk.CycleState
	mu sync.Mutex
	m  map[fwk.StateKey]fwk.StateData
}

func newState() *cycleState { return &cycleState{m: map[fwk.StateKey]fwk.StateData{}} }

func (s *cycleState) Read(k fwk.StateKey) (fwk.StateData, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.m[k]; ok {
		return d, nil
	}
	return nil, fwk.ErrNotFound
}

func (s *cycleState) Write(k fwk.StateKey, d fwk.StateData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = d
}

// nodeInfo is the part of fwk.NodeInfo the plugins use.
type nodeInfo struct {
	fwk.NodeInfo
	node *v1.Node
}

func (n nodeInfo) Node() *v1.Node { return n.node }

func makeNode(name, cpu, gpus string, labels map[string]string, taints ...v1.Taint) *v1.Node {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Gi"),
		v1.ResourcePods: resource.MustParse("110")}
	if gpus != "" {
		alloc["nvidia.com/gpu"] = resource.MustParse(gpus)
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: v1.NodeSpec{Taints: taints}, Status: v1.NodeStatus{Allocatable: alloc}}
}

func makePod(labels map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
}

// filterAll runs one cycle's PreFilter and Filter over the nodes, as the scheduler does (sequentially).
func filterAll(p *Plugin, pod *v1.Pod, nodes []*v1.Node) []*fwk.Status {
	ctx, state := context.Background(), newState()
	if _, st := p.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
		return []*fwk.Status{st}
	}
	out := make([]*fwk.Status, len(nodes))
	for i, n := range nodes {
		out[i] = p.Filter(ctx, state, pod, nodeInfo{node: n})
	}
	return out
}
