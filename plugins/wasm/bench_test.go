package wasm

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Plugin-level benchmarks: one scheduling cycle's Filter (PreFilter + Filter on every node) or
// Score (PreScore + Score on every node) for 1 and 500 nodes through WASM guests, reported per call (ns/call, allocs/call and B/call of the host's Go heap; the guest's own
// allocations live in its linear memory). Subtracting one variant from the next splits WASM's cost:
//
//	wasm-empty                      the boundary crossing (pool, deadline, wazero call, Go guest entry)
//	wasm-fetch − wasm-empty         field fetches (what gpufilter reads: pod labels, node allocatable)
//	wasm-gpufilter-nogc − wasm-fetch guest compute
//	wasm-gpufilter − …-nogc         guest GC (GOGC=off: collection only at GOMEMLIMIT)
//	wasm-alloc − wasm-alloc-nogc    guest GC of a guest that copies every field into maps
//
// The native gpufilter's figures come from the same benchmarks in plugins/gpufilter (same nodes and
// pod); benchmarks/bench_wasm_plugin.py runs both and prints them side by side.

// benchNodes are kwok-like nodes: six labels each, every fifth a tainted GPU node.
func benchNodes(n int) []*v1.Node {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		labels := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
			"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3),
			"type": "kwok", "node.kubernetes.io/instance-type": "m5.8xlarge"}
		if i%5 == 0 {
			nodes[i] = makeNode(name, "64", "8", labels,
				v1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule})
		} else {
			nodes[i] = makeNode(name, "32", "", labels)
		}
	}
	return nodes
}

func benchPod() *v1.Pod {
	return makePod(map[string]string{"app": "trainer", workloadTypeLabel: gpuIntensive,
		"pod-template-hash": "5d8f7c9b6d"})
}

type benchVariant struct {
	name  string
	guest func(testing.TB) string
	env   map[string]string
}

func benchVariants() []benchVariant {
	bench := func(mode string) func(testing.TB) string {
		return func(tb testing.TB) string { return testGuest(tb, "bench", "mode="+mode) }
	}
	off := map[string]string{"GOGC": "off"}
	return []benchVariant{
		{"wasm-empty", bench("empty"), nil},
		{"wasm-fetch", bench("fetch"), nil},
		{"wasm-gpufilter-nogc", gpufilterGuest, off},
		{"wasm-gpufilter", gpufilterGuest, nil},
		{"wasm-gpufilter-trusted", gpufilterGuest, nil},
		{"wasm-alloc-nogc", bench("alloc"), off},
		{"wasm-alloc", bench("alloc"), nil},
	}
}

func benchPlugin(b *testing.B, v benchVariant) *Plugin {
	a := testArgs(v.guest(b))
	a.Env = v.env
	a.CallTimeout = metav1.Duration{Duration: time.Second}
	a.Trusted = strings.HasSuffix(v.name, "-trusted") // no per-call deadline (args.go)
	return newTestPlugin(b, a)
}

// perCall runs cycle b.N times and reports the figures per extension-point call.
func perCall(b *testing.B, calls int, cycle func()) {
	cycle() // warm: instance created, caches filled
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

func nodeInfos(nodes []*v1.Node) []fwk.NodeInfo {
	out := make([]fwk.NodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = nodeInfo{node: n}
	}
	return out
}

func BenchmarkFilter(b *testing.B) {
	ctx, pod := context.Background(), benchPod()
	for _, n := range []int{1, 500} {
		nis := nodeInfos(benchNodes(n))
		for _, v := range benchVariants() {
			b.Run(fmt.Sprintf("%s/nodes=%d", v.name, n), func(b *testing.B) {
				p := benchPlugin(b, v)
				perCall(b, n, func() {
					state := newState()
					if _, st := p.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
						b.Fatal(st)
					}
					for _, ni := range nis {
						if st := p.Filter(ctx, state, pod, ni); st.Code() == fwk.Error {
							b.Fatal(st)
						}
					}
				})
			})
		}
	}
}

// scoreCycle is one scheduling cycle's PreScore and Score on every node, as the scheduler runs them.
func scoreCycle(b *testing.B, p *Plugin, pod *v1.Pod, nis []fwk.NodeInfo) {
	ctx, state := context.Background(), newState()
	if st := p.PreScore(ctx, state, pod, nil); !st.IsSuccess() {
		b.Fatal(st)
	}
	for _, ni := range nis {
		if _, st := p.Score(ctx, state, pod, ni); !st.IsSuccess() {
			b.Fatal(st)
		}
	}
}

func BenchmarkScore(b *testing.B) {
	pod := benchPod()
	for _, n := range []int{1, 500} {
		nis := nodeInfos(benchNodes(n))
		for _, v := range benchVariants() {
			b.Run(fmt.Sprintf("%s/nodes=%d", v.name, n), func(b *testing.B) {
				p := benchPlugin(b, v)
				perCall(b, n, func() { scoreCycle(b, p, pod, nis) })
			})
		}
	}
}

// BenchmarkBoundary splits the empty call: wazero alone (a hand-written guest without a runtime),
// wazero plus the Go guest's export entry, and the whole plugin call (pool, deadline, cycle state).
func BenchmarkBoundary(b *testing.B) {
	ctx, pod, ni := context.Background(), benchPod(), nodeInfo{node: benchNodes(1)[0]}
	direct := func(b *testing.B, path string) {
		p := newTestPlugin(b, testArgs(path))
		in, err := p.pool.get(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer p.pool.put(in)
		cd := newCycle(nil, pod)
		perCall(b, 1, func() {
			in.cd, in.node = cd, ni.node
			if _, _, err := in.call(expFilter, cd.id, time.Second); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("wazero-call/hand-written-guest", func(b *testing.B) { direct(b, writeWasm(b, handGuest(opI32(0)))) })
	b.Run("wazero-call/hand-written-guest-no-deadline", func(b *testing.B) {
		closeOnContextDone = false // no termination checks, no watcher goroutine per call
		defer func() { closeOnContextDone = true }()
		direct(b, writeWasm(b, handGuest(opI32(0))))
	})
	b.Run("wazero-call/hand-written-guest-one-fetch", func(b *testing.B) {
		m := handGuest([]byte{0x41, 0x00, 0x41, 0x20, 0x10, 0x00, 0x1a, 0x41, 0x00}) // node_allocatable(0, 32); drop; 0
		m.imports = []wasmImport{{"kwokbench", "node_allocatable", []byte{tI32, tI32}, []byte{tI32}}}
		direct(b, writeWasm(b, m))
	})
	b.Run("wazero-call/go-guest", func(b *testing.B) { direct(b, testGuest(b, "bench", "mode=empty")) })
	b.Run("plugin-filter/go-guest", func(b *testing.B) {
		p := newTestPlugin(b, testArgs(testGuest(b, "bench", "mode=empty")))
		state := newState()
		perCall(b, 1, func() { p.Filter(ctx, state, pod, ni) })
	})
	b.Run("plugin-filter/go-guest-trusted", func(b *testing.B) {
		a := testArgs(testGuest(b, "bench", "mode=empty"))
		a.Trusted = true
		p := newTestPlugin(b, a)
		state := newState()
		perCall(b, 1, func() { p.Filter(ctx, state, pod, ni) })
	})
}

// BenchmarkGuestGC times one full collection in the guest (its run_gc export), after the alloc
// guest has filtered 500 nodes, and reports the guest's linear memory.
func BenchmarkGuestGC(b *testing.B) {
	ctx, pod := context.Background(), benchPod()
	for _, v := range []benchVariant{
		{"gpufilter-like", func(tb testing.TB) string { return testGuest(tb, "bench", "mode=fetch") }, nil},
		{"alloc", func(tb testing.TB) string { return testGuest(tb, "bench", "mode=alloc") }, nil},
	} {
		b.Run(v.name, func(b *testing.B) {
			a := testArgs(v.guest(b))
			a.PoolSize = 1
			p := newTestPlugin(b, a)
			filterAll(p, pod, benchNodes(500))
			in, err := p.pool.get(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer p.pool.put(in)
			gc := in.mod.ExportedFunction("run_gc")
			perCall(b, 1, func() {
				if err := gc.CallWithStack(&in.ctx, in.stack[:]); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(float64(in.mem.Size())/(1<<20), "MiB-guest-memory")
		})
	}
}

// BenchmarkNodeNumber is the reference WASM extension's NodeNumber rule on this host (plugins/nodenumber-wasm, with
// and without the per-call deadline): one Score cycle over 1 and 500 nodes. benchmarks/bench_wasm_extension.py runs
// the reference's own guest on the reference's host in the same shape (benchmarks/wasm_reference) next to it.
func BenchmarkNodeNumber(b *testing.B) {
	pod := benchPod()
	pod.Name = "pods-x-3"
	for _, n := range []int{1, 500} {
		nis := nodeInfos(benchNodes(n))
		for _, trusted := range []bool{false, true} {
			name := map[bool]string{false: "own", true: "own-trusted"}[trusted]
			b.Run(fmt.Sprintf("%s/nodes=%d", name, n), func(b *testing.B) {
				a := testArgs(buildGuest(b, filepath.Join("..", "nodenumber-wasm"), "-buildmode=c-shared"))
				a.CallTimeout = metav1.Duration{Duration: time.Second}
				a.Trusted = trusted
				p := newTestPlugin(b, a)
				perCall(b, n, func() { scoreCycle(b, p, pod, nis) })
			})
		}
	}
}
