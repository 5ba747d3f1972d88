package wasm

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Faults stay inside the plugin: every misbehaving guest below yields a status (or an error from
// New), the call returns promptly, and a broken instance is replaced, not reused.

func faultPod(at, kind, node string) *v1.Pod {
	l := map[string]string{"fault-at": at, "fault": kind}
	if node != "" {
		l["fault-node"] = node
	}
	return makePod(l)
}

func threeNodes() []*v1.Node {
	return []*v1.Node{makeNode("n0", "4", "", nil), makeNode("n1", "4", "", nil), makeNode("n2", "4", "", nil)}
}

func wantStatus(t *testing.T, st *fwk.Status, code fwk.Code, parts ...string) {
	t.Helper()
	t.Logf("%v: %s", st.Code(), st.Message())
	if st.Code() != code {
		t.Fatalf("status %v %q, want %v", st.Code(), st.Message(), code)
	}
	for _, p := range parts {
		if !strings.Contains(st.Message(), p) {
			t.Fatalf("status %q does not contain %q", st.Message(), p)
		}
	}
}

func TestFilterFaults(t *testing.T) {
	cases := []struct {
		kind      string
		parts     []string
		discarded int
	}{
		// the SDK recovers a panic: the instance survives
		{"panic", []string{"WASM guest filter failed: guest panic: boom"}, 0},
		{"exit", []string{"exited with code 3"}, 1},
		{"loop", []string{"exceeded its call timeout of 200ms"}, 1},
		// sleep is a no-op for the guest, so time.Sleep spins and the deadline stops it
		{"sleep", []string{"exceeded its call timeout of 200ms"}, 1},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			a := testArgs(testGuest(t, "faulty", ""))
			a.PoolSize, a.CallTimeout = 1, metav1.Duration{Duration: 200 * time.Millisecond}
			p := newTestPlugin(t, a)
			start := time.Now()
			sts := filterAll(p, faultPod("filter", c.kind, "n1"), threeNodes())
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Fatalf("the cycle took %v", elapsed)
			}
			if !sts[0].IsSuccess() || !sts[2].IsSuccess() {
				t.Fatalf("the nodes around the fault: %v, %v", sts[0], sts[2])
			}
			wantStatus(t, sts[1], fwk.UnschedulableAndUnresolvable, c.parts...)
			if s := p.pool.stats(); s.discarded != c.discarded || s.created != 1+c.discarded {
				t.Fatalf("pool %+v: want %d discarded, each replaced", s, c.discarded)
			}
		})
	}
}

func TestOutOfMemory(t *testing.T) {
	a := testArgs(testGuest(t, "faulty", ""))
	a.PoolSize, a.MemoryLimitPages = 1, 256 // 16 MiB
	p := newTestPlugin(t, a)
	sts := filterAll(p, faultPod("filter", "oom", "n1"), threeNodes())
	wantStatus(t, sts[1], fwk.UnschedulableAndUnresolvable, "trapped: wasm error: unreachable",
		"runtime: out of memory", "fatal error: out of memory")
	if !sts[0].IsSuccess() || !sts[2].IsSuccess() {
		t.Fatalf("the nodes around the fault: %v, %v", sts[0], sts[2])
	}
}

// An unrecovered Go panic (a guest without the SDK) kills the guest: the Go runtime prints it and
// traps (unreachable); the host reports what it printed.
func TestRawGuestPanic(t *testing.T) {
	p := newTestPlugin(t, testArgs(testGuest(t, "raw", "mode=panic")))
	for range 2 {
		sts := filterAll(p, makePod(nil), threeNodes()[:1])
		wantStatus(t, sts[0], fwk.UnschedulableAndUnresolvable, "trapped: wasm error: unreachable (panic: raw guest panic")
	}
	if s := p.pool.stats(); s.discarded != 2 {
		t.Fatalf("pool %+v", s)
	}
}

func TestBadBufferTraps(t *testing.T) {
	p := newTestPlugin(t, testArgs(testGuest(t, "raw", "mode=badptr")))
	sts := filterAll(p, makePod(map[string]string{"a": "b"}), threeNodes()[:1])
	wantStatus(t, sts[0], fwk.UnschedulableAndUnresolvable, "trapped: the guest passed a buffer", "outside its memory")
}

func TestHandWrittenGuests(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		p := newTestPlugin(t, testArgs(writeWasm(t, handGuest(opI32(0)))))
		if sts := filterAll(p, makePod(nil), threeNodes()); !sts[0].IsSuccess() || !sts[2].IsSuccess() {
			t.Fatalf("%v", sts)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		p := newTestPlugin(t, testArgs(writeWasm(t, handGuest(opUnreachable))))
		sts := filterAll(p, makePod(nil), threeNodes()[:1])
		wantStatus(t, sts[0], fwk.UnschedulableAndUnresolvable, "trapped: wasm error: unreachable")
	})
	t.Run("spin", func(t *testing.T) {
		a := testArgs(writeWasm(t, handGuest(opSpin)))
		a.CallTimeout.Duration = 50 * time.Millisecond
		p := newTestPlugin(t, a)
		sts := filterAll(p, makePod(nil), threeNodes()[:1])
		wantStatus(t, sts[0], fwk.UnschedulableAndUnresolvable, "exceeded its call timeout of 50ms")
	})
	t.Run("unknown status code", func(t *testing.T) {
		p := newTestPlugin(t, testArgs(writeWasm(t, handGuest(opI32(42)))))
		sts := filterAll(p, makePod(nil), threeNodes()[:1])
		wantStatus(t, sts[0], fwk.UnschedulableAndUnresolvable, "returned status code 42")
	})
}

func TestScoreAndPreFilterFaults(t *testing.T) {
	a := testArgs(testGuest(t, "faulty", ""))
	a.CallTimeout.Duration = 200 * time.Millisecond
	p := newTestPlugin(t, a)
	ctx, n := context.Background(), nodeInfo{node: makeNode("n0", "4", "", nil)}
	for kind, want := range map[string]string{"panic": "guest panic: boom", "exit": "exited with code 3",
		"loop": "exceeded its call timeout"} {
		state, pod := newState(), faultPod("score", kind, "")
		if st := p.PreScore(ctx, state, pod, nil); !st.IsSuccess() {
			t.Fatal(st)
		}
		v, st := p.Score(ctx, state, pod, n)
		wantStatus(t, st, fwk.Error, want)
		if v != 0 {
			t.Fatalf("score %d with an error", v)
		}
		_, st = p.PreFilter(ctx, newState(), faultPod("prefilter", kind, ""), nil)
		wantStatus(t, st, fwk.UnschedulableAndUnresolvable, "prefilter", want)
	}
	// and it still works
	state, pod := newState(), makePod(nil)
	if v, st := p.Score(ctx, state, pod, n); !st.IsSuccess() || v != 50 {
		t.Fatalf("Score after the faults = %d, %v", v, st)
	}
}

// Guests that cannot work fail New, at the scheduler's start, with the cause.
func TestNewRejects(t *testing.T) {
	garbage := t.TempDir() + "/garbage.wasm"
	if err := os.WriteFile(garbage, []byte("not wasm at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	noMemory := handGuest(opI32(0))
	noMemory.exportMemory = false
	bigMemory := handGuest(opI32(0))
	bigMemory.memMin = 2000
	wrongSig := handGuest(opI32(0))
	wrongSig.funcs[2].params = []byte{tI32}
	withImport := func(mod, name string, params, results []byte) wasmModule {
		m := handGuest(opI32(0))
		m.imports = []wasmImport{{mod, name, params, results}}
		return m
	}
	cases := []struct {
		name, path, want string
	}{
		{"missing file", "/nonexistent/guest.wasm", "no such file"},
		{"not wasm", garbage, "not a valid WebAssembly module"},
		{"command module", buildGuest(t, "testdata/guests/faulty"), "WASI command (it exports _start)"},
		{"init panics", testGuest(t, "faulty", "initFault=panic"), "instantiating the guest: trapped: wasm error: unreachable (panic: faulty guest: init failed"},
		{"no abi exports", writeWasm(t, wasmModule{memMin: 1, exportMemory: true}), "does not export abi_version and capabilities"},
		{"other ABI", writeWasm(t, wasmModule{memMin: 1, exportMemory: true, funcs: abiFuncs(2, capFilter)}), "guest speaks ABI v2"},
		{"no extension point", writeWasm(t, wasmModule{memMin: 1, exportMemory: true, funcs: abiFuncs(1, 0)}), "implements no extension point"},
		{"capability not exported", writeWasm(t, wasmModule{memMin: 1, exportMemory: true, funcs: abiFuncs(1, capScore)}), "include score but it does not export score"},
		{"wrong signature", writeWasm(t, wrongSig), "guest export filter has signature (i32) -> (i32), want (i64) -> (i32)"},
		{"unknown host function", writeWasm(t, withImport("kwokbench", "nope", nil, nil)), "imports kwokbench.nope, which this host does not provide"},
		{"wrong host signature", writeWasm(t, withImport("kwokbench", "pod_labels", []byte{tI64}, nil)), "imports kwokbench.pod_labels with signature (i64) -> ()"},
		{"foreign import", writeWasm(t, withImport("env", "f", nil, nil)), "imports env.f: only kwokbench and wasi_snapshot_preview1"},
		{"no memory", writeWasm(t, noMemory), "does not export its memory"},
		{"memory over limit", writeWasm(t, bigMemory), "over limit of 1024 pages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(context.Background(), &runtime.Unknown{Raw: []byte(`{"guestURL": "` + c.path + `"}`)}, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New = %v, want an error containing %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "Wasm plugin, guest ") {
				t.Fatalf("the error does not name the plugin and guest: %v", err)
			}
		})
	}
}
