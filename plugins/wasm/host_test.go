package wasm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Each field crosses the boundary at most once per cycle (pod) or per call (node), however often
// the guest reads it: the "all" guest reads everything twice at every extension point.
func TestFieldsFetchedOncePerCycleAndCall(t *testing.T) {
	a := testArgs(testGuest(t, "bench", "mode=all"))
	a.PoolSize = 1
	p := newTestPlugin(t, a)
	ctx, state := context.Background(), newState()
	pod := makePod(map[string]string{"app": "web"})
	nodes := []*v1.Node{
		makeNode("n0", "8", "", map[string]string{"zone": "a"}, v1.Taint{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}),
		makeNode("n1", "16", "2", nil),
		makeNode("n2", "120", "", nil),
	}
	if _, st := p.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	scores := fwk.NodeScoreList{}
	for _, n := range nodes {
		if st := p.Filter(ctx, state, pod, nodeInfo{node: n}); !st.IsSuccess() {
			t.Fatal(st)
		}
	}
	if st := p.PreScore(ctx, state, pod, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	for _, n := range nodes {
		v, st := p.Score(ctx, state, pod, nodeInfo{node: n})
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		scores = append(scores, fwk.NodeScore{Name: n.Name, Score: v})
	}
	if p.ScoreExtensions() == nil {
		t.Fatal("the guest normalizes but ScoreExtensions is nil")
	}
	if st := p.ScoreExtensions().NormalizeScore(ctx, state, pod, scores); !st.IsSuccess() {
		t.Fatal(st)
	}
	// scores were the allocatable cores capped at 100; normalize_score turned s into 100-s
	if scores[0].Score != 92 || scores[1].Score != 84 || scores[2].Score != 0 {
		t.Fatalf("normalized scores %v", scores)
	}
	got := p.pool.stats().fetches
	want := [numFields]uint64{fieldPodLabels: 1, fieldPodRequests: 1, fieldNodeName: 6, fieldNodeLabels: 6,
		fieldNodeAllocatable: 6, fieldNodeTaints: 6, fieldNodeScores: 1}
	if got != want {
		t.Fatalf("host fetches %v, want %v", got, want)
	}
	// a new cycle fetches the pod again
	if _, st := p.PreFilter(ctx, newState(), pod, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	if got := p.pool.stats().fetches; got[fieldPodLabels] != 2 {
		t.Fatalf("pod labels fetched %d times over two cycles", got[fieldPodLabels])
	}
}

func TestEncodings(t *testing.T) {
	n := makeNode("n0", "1500m", "3", map[string]string{"a": "b"},
		v1.Taint{Key: "k", Value: "v", Effect: v1.TaintEffectNoExecute}, v1.Taint{Key: "x", Effect: "Custom"})
	if got := appendResources(nil, n.Status.Allocatable, 0); len(got) != resourcesSize || got[0] != 0xdc || got[1] != 0x05 ||
		got[16] != 3 || got[24] != 110 {
		t.Fatalf("allocatable % x", got)
	}
	if got := string(appendLabels(nil, n.Labels)); got != "\x01a\x01b" {
		t.Fatalf("labels %q", got)
	}
	if got := string(appendTaints(nil, n.Spec.Taints)); got != "\x01k\x01v\x02\x01x\x00\xff" {
		t.Fatalf("taints %q", got)
	}
	req := podRequests(makePod(nil)) // 250m, 1Gi, no GPU, one pod
	if len(req) != resourcesSize || req[0] != 250 || req[8+3] != 0x40 || req[16] != 0 || req[24] != 1 {
		t.Fatalf("requests % x", req)
	}
}

func TestLazyCycleAndMissingNode(t *testing.T) {
	p := newTestPlugin(t, testArgs(gpufilterGuest(t)))
	ctx, pod := context.Background(), makePod(map[string]string{"workload-type": "GPU-intensive"})
	// Filter without PreFilter (a profile enabling only this Filter) and with no CycleState at all
	if st := p.Filter(ctx, newState(), pod, nodeInfo{node: makeNode("n", "4", "1", nil)}); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := p.Filter(ctx, nil, pod, nodeInfo{node: makeNode("n", "4", "", nil)}); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatal(st)
	}
	if st := p.Filter(ctx, nil, pod, nodeInfo{}); st.Code() != fwk.Error {
		t.Fatalf("Filter without a node = %v", st)
	}
}

// A guest with only a score: PreFilter skips the plugin's Filter.
func TestScoreOnlyGuestSkipsFilter(t *testing.T) {
	m := wasmModule{memMin: 1, exportMemory: true,
		funcs: append(abiFuncs(1, capScore), wasmFunc{[]byte{tI64}, []byte{tI64}, opI64(7), "score"})}
	p := newTestPlugin(t, testArgs(writeWasm(t, m)))
	ctx, state, pod := context.Background(), newState(), makePod(nil)
	if _, st := p.PreFilter(ctx, state, pod, nil); st.Code() != fwk.Skip {
		t.Fatalf("PreFilter = %v, want Skip", st)
	}
	if v, st := p.Score(ctx, state, pod, nodeInfo{node: makeNode("n", "1", "", nil)}); !st.IsSuccess() || v != 7 {
		t.Fatalf("Score = %d, %v", v, st)
	}
}

func TestGuestOverHTTP(t *testing.T) {
	wasm, err := os.ReadFile(gpufilterGuest(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/gpufilter.wasm" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(wasm)
	}))
	defer srv.Close()
	p := newTestPlugin(t, testArgs(srv.URL+"/gpufilter.wasm"))
	if sts := filterAll(p, makePod(map[string]string{"workload-type": "GPU-intensive"}),
		[]*v1.Node{makeNode("n", "4", "", nil)}); sts[0].Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatal(sts[0])
	}
	if _, err := tryPlugin(testArgs(srv.URL + "/missing.wasm")); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("missing guest: %v", err)
	}
	// file:// works too
	if _, err := tryPlugin(testArgs("file://" + gpufilterGuest(t))); err != nil {
		t.Fatal(err)
	}
}

func TestArgs(t *testing.T) {
	a, err := decodeArgs(&runtime.Unknown{Raw: []byte(`{"guestURL": "/g.wasm"}`)})
	if err != nil || a.MemoryLimitPages != DefaultMemoryLimitPages || a.CallTimeout.Duration != DefaultCallTimeout ||
		a.PoolSize != DefaultPoolSize {
		t.Fatalf("defaults: %+v %v", a, err)
	}
	a, err = decodeArgs(&runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte(
		"apiVersion: kubescheduler.config.k8s.io/v1\nkind: WasmArgs\nguestURL: /g.wasm\nmemoryLimitPages: 256\n" +
			"callTimeout: 20ms\npoolSize: 2\nenv: {GOGC: \"off\"}\ntrusted: true\n")})
	if err != nil || a.MemoryLimitPages != 256 || a.CallTimeout.Duration != 20*time.Millisecond || a.PoolSize != 2 ||
		a.Env["GOGC"] != "off" || !a.Trusted {
		t.Fatalf("yaml: %+v %v", a, err)
	}
	for raw, want := range map[string]string{
		`{}`:                                           "guestURL is required",
		`{"guestURL": "g", "callTimout": "1s"}`:        `unknown field "callTimout"`,
		`{"guestURL": "g", "poolSize": -1}`:            "poolSize -1 is negative",
		`{"guestURL": "g", "callTimeout": "-1s"}`:      "callTimeout -1s is negative",
		`{"guestURL": "g", "memoryLimitPages": 70000}`: "over 65536",
	} {
		if _, err := decodeArgs(&runtime.Unknown{Raw: []byte(raw)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	if _, err := decodeArgs(nil); err == nil {
		t.Error("no args must be an error (guestURL is required)")
	}
	if _, err := loadGuest(context.Background(), "ftp://host/g.wasm"); err == nil || !strings.Contains(err.Error(), "unsupported URL scheme") {
		t.Errorf("ftp: %v", err)
	}
}
