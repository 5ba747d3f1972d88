package guest

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

// fakeHost serves encoded fields the way the host plugin does and counts fetches.
type fakeHost struct {
	fields  map[field][]byte
	fetches [numFields]int
	reason  string
	scores  []int64
}

func (h *fakeHost) fetch(f field, buf []byte) uint32 {
	h.fetches[f]++
	b, ok := h.fields[f]
	if !ok {
		return notAvailable
	}
	if len(b) <= len(buf) {
		copy(buf, b)
	}
	return uint32(len(b))
}

func (h *fakeHost) setReason(r string)       { h.reason = r }
func (h *fakeHost) setScores(scores []int64) { h.scores = slices.Clone(scores) }
func (h *fakeHost) log(string)               {}

func strs(kv ...string) []byte {
	var b []byte
	for _, s := range kv {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func res(cpu, mem, gpu, pods int64) []byte {
	var b []byte
	for _, v := range []int64{cpu, mem, gpu, pods} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func install(t *testing.T, h *fakeHost) {
	t.Helper()
	old, oldF, oldS, oldP, oldN := host, filterFn, scoreFn, preFilterFn, normalizeFn
	host = h
	t.Cleanup(func() {
		host, filterFn, scoreFn, preFilterFn, normalizeFn = old, oldF, oldS, oldP, oldN
		cycle, hints = 0, [numFields]int{}
	})
}

func TestAccessorsDecodeAndCache(t *testing.T) {
	long := strings.Repeat("v", 1000) // longer than the first buffer guess: fetched again, bigger
	h := &fakeHost{fields: map[field][]byte{
		fieldPodLabels:       strs("workload-type", "GPU-intensive", "app", "web"),
		fieldPodRequests:     res(500, 1<<30, 1, 1),
		fieldNodeName:        []byte("node-7"),
		fieldNodeLabels:      strs("zone", "a", "long", long),
		fieldNodeAllocatable: res(32000, 64<<30, 8, 110),
		fieldNodeTaints:      append(append(strs("gpu", "true"), byte(NoSchedule)), append(strs("x", ""), byte(NoExecute))...),
	}}
	install(t, h)
	var got []string
	RegisterFilter(func(p Pod, n Node) Status {
		for range 2 { // a second access in the same call is served from the cache
			wt, _ := p.Labels().Get("workload-type")
			v, _ := n.Labels().Get("long")
			got = append(got, wt, n.Name(), v[:3])
			if p.Requests() != (Resources{500, 1 << 30, 1, 1}) || n.Allocatable() != (Resources{32000, 64 << 30, 8, 110}) {
				t.Errorf("resources: %+v %+v", p.Requests(), n.Allocatable())
			}
			if ts := n.Taints(); len(ts) != 2 || ts[0] != (Taint{"gpu", "true", NoSchedule}) || ts[1].Effect != NoExecute {
				t.Errorf("taints: %+v", ts)
			}
		}
		return Success()
	})
	if capabilities() != capFilter {
		t.Fatalf("capabilities = %b", capabilities())
	}
	for _, c := range []uint64{1, 1, 2} {
		if code := dispatchFilter(c); code != 0 {
			t.Fatalf("filter = %d (%s)", code, h.reason)
		}
	}
	if got[0] != "GPU-intensive" || got[1] != "node-7" || got[2] != "vvv" {
		t.Fatalf("got %q", got)
	}
	// pod fields once per cycle (cycles 1 and 2), node fields once per call (3 calls),
	// the long labels twice on the first call only
	want := [numFields]int{fieldPodLabels: 2, fieldPodRequests: 2, fieldNodeName: 3, fieldNodeLabels: 4,
		fieldNodeAllocatable: 3, fieldNodeTaints: 3}
	if h.fetches != want {
		t.Fatalf("fetches = %v, want %v", h.fetches, want)
	}
	l := Labels{h.fields[fieldPodLabels]}
	if l.Len() != 2 || l.Map()["app"] != "web" {
		t.Fatalf("labels: %d %v", l.Len(), l.Map())
	}
	if _, ok := l.Get("missing"); ok {
		t.Fatal("Get of a missing key")
	}
}

func TestStatusesAndScores(t *testing.T) {
	h := &fakeHost{fields: map[field][]byte{}}
	install(t, h)
	RegisterFilter(func(Pod, Node) Status { return UnschedulableAndUnresolvable("no") })
	if code := dispatchFilter(1); Code(code) != CodeUnschedulableAndUnresolvable || h.reason != "no" {
		t.Fatalf("filter = %d %q", code, h.reason)
	}
	RegisterScore(func(Pod, Node) (int64, Status) { return 42, Success() })
	if s := dispatchScore(1); s != 42 {
		t.Fatalf("score = %d", s)
	}
	RegisterScore(func(Pod, Node) (int64, Status) { return 0, Error("broken") })
	if s := dispatchScore(1); s != -int64(CodeError) || h.reason != "broken" {
		t.Fatalf("score = %d %q", s, h.reason)
	}
	RegisterScore(func(Pod, Node) (int64, Status) { return -3, Success() })
	if s := dispatchScore(1); s != -int64(CodeFault) {
		t.Fatalf("negative score = %d", s)
	}
	RegisterPreFilter(func(Pod) Status { return Skip() })
	if code := dispatchPreFilter(1); Code(code) != CodeSkip {
		t.Fatalf("prefilter = %d", code)
	}
	// node_scores: one node "a" with score 10, then a truncated second entry is malformed → fault
	RegisterNormalizeScore(func(_ Pod, s []NodeScore) Status {
		s[0].Score *= 10
		return Success()
	})
	h.fields[fieldNodeScores] = append(strs("a"), res(10, 0, 0, 0)[:8]...)
	if code := dispatchNormalizeScore(1); code != 0 || !slices.Equal(h.scores, []int64{100}) {
		t.Fatalf("normalize = %d %v", code, h.scores)
	}
	h.fields[fieldNodeScores] = append(h.fields[fieldNodeScores], strs("b")...)
	if code := dispatchNormalizeScore(2); Code(code) != CodeFault || !strings.Contains(h.reason, "malformed") {
		t.Fatalf("malformed normalize = %d %q", code, h.reason)
	}
	if capabilities() != capPreFilter|capFilter|capScore|capNormalizeScore {
		t.Fatalf("capabilities = %b", capabilities())
	}
}

func TestPanicsBecomeFaults(t *testing.T) {
	h := &fakeHost{fields: map[field][]byte{}}
	install(t, h)
	RegisterFilter(func(p Pod, n Node) Status {
		var m map[string]int
		m["x"]++ // assignment to entry in nil map
		return Success()
	})
	if code := dispatchFilter(1); Code(code) != CodeFault || !strings.Contains(h.reason, "nil map") {
		t.Fatalf("filter = %d %q", code, h.reason)
	}
	RegisterScore(func(p Pod, n Node) (int64, Status) { return 0, Status{Code: Code(len(n.Name()))} })
	if s := dispatchScore(1); s != -int64(CodeFault) || !strings.Contains(h.reason, "node name not available") {
		t.Fatalf("score without a node = %d %q", s, h.reason)
	}
	filterFn = nil
	if code := dispatchFilter(1); Code(code) != CodeFault || !strings.Contains(h.reason, "no Filter") {
		t.Fatalf("unregistered = %d %q", code, h.reason)
	}
}
