package gpushare

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
)

// The per-GPU ledger and the extension points that keep it (Reserve, Unreserve, Bind), on nodes made here: the
// framework's NodeInfo, PodInfo and Resource are interfaces, and each stand-in below answers the few methods the
// plugin calls (any other would panic: the test would say the plugin reads something new).

type resourceOf struct {
	fwk.Resource
	milliCPU int64
}

func (r resourceOf) GetMilliCPU() int64 { return r.milliCPU }

type podInfo struct {
	fwk.PodInfo
	pod *v1.Pod
}

func (p podInfo) GetPod() *v1.Pod { return p.pod }

type nodeInfo struct {
	fwk.NodeInfo
	node *v1.Node
	pods []*v1.Pod
}

func (n nodeInfo) Node() *v1.Node { return n.node }

func (n nodeInfo) GetPods() []fwk.PodInfo {
	out := make([]fwk.PodInfo, len(n.pods))
	for i, p := range n.pods {
		out[i] = podInfo{pod: p}
	}
	return out
}

func (n nodeInfo) GetAllocatable() fwk.Resource { return resourceOf{milliCPU: 64000} }

func (n nodeInfo) GetRequested() fwk.Resource {
	var cpu int64
	for _, p := range n.pods {
		cpu += DemandOf(p).CPU
	}
	return resourceOf{milliCPU: cpu}
}

func gpuNode(name string, gpus int64) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ModelLabel: "T4"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}}}
}

// gpuPod asks for milli of one GPU (milli < 1000) or whole GPUs (milli 1000·k); on node with annotation index.
func gpuPod(name string, milli int64, node, index string) *v1.Pod {
	p := pod("1", 0, milli)
	if milli >= MilliPerGPU {
		p = pod("1", milli/MilliPerGPU, milli)
	}
	p.Name, p.Namespace, p.UID, p.Spec.NodeName = name, "default", types.UID("uid-"+name), node
	if index != "" {
		p.Annotations = map[string]string{IndexAnnotation: index}
	}
	return p
}

// plugin is one profile's instance (on its own record, or on the process's for nil), its snapshot the given
// nodes, its Bindings collected.
func plugin(t *testing.T, policy string, book *Bookings, nodes map[string]*nodeInfo, bound *[]*v1.Binding) *GPUShare {
	t.Helper()
	args := `{"policy":"` + policy + `","workload":[{"cpu":1000,"gpuMilli":400,"weight":1},{"cpu":1000,"gpus":1,"weight":1}]}`
	p, err := New(context.Background(), &runtime.Unknown{Raw: []byte(args)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*GPUShare)
	if book != nil { // nil: the process's record, as New gives every instance
		pl.book = book
	}
	pl.nodeInfo = func(name string) (fwk.NodeInfo, error) {
		if n, ok := nodes[name]; ok {
			return *n, nil
		}
		return nil, errors.New("no node " + name)
	}
	pl.bind = func(_ context.Context, b *v1.Binding) error {
		*bound = append(*bound, b)
		return nil
	}
	return pl
}

func TestTheLedgerIsRebuiltFromTheAnnotationsAfterARestart(t *testing.T) {
	// a new process (an empty record) reads every placed pod's GPUs back from its annotation
	pods := []*v1.Pod{gpuPod("a", 300, "n", "0"), gpuPod("b", 500, "n", "0"), gpuPod("c", 2000, "n", "2-3"),
		pod("4", 0, 0)}
	l := NewBookings().NodeLedger(gpuNode("n", 4), 10000, pods)
	if want := []int64{200, 1000, 0, 0}; !slices.Equal(l.Free, want) {
		t.Errorf("free %v, want %v", l.Free, want)
	}
	if len(l.Unknown) != 0 || len(l.Over) != 0 || len(l.Tags) != 2 || l.Tags["share"] != 2 || l.Tags["2-gpu"] != 1 {
		t.Errorf("unknown %v, over %v, tags %v", l.Unknown, l.Over, l.Tags)
	}
}

func TestAPlacedPodWithoutARecordIsUnknownNotGuessed(t *testing.T) {
	// bound by another binder (no annotation), or an index the node lacks: its GPU is not guessed, and the node
	// takes no GPU pod while it is there (a guess could hand its GPU to the next pod)
	for _, stray := range []*v1.Pod{gpuPod("stray", 500, "n", ""), gpuPod("stray", 500, "n", "7"),
		gpuPod("stray", 2000, "n", "1-1")} {
		book := NewBookings()
		n := &nodeInfo{node: gpuNode("n", 4), pods: []*v1.Pod{gpuPod("a", 300, "n", "0"), stray}}
		var bound []*v1.Binding
		pl := plugin(t, "BestFit", book, map[string]*nodeInfo{"n": n}, &bound)
		l := pl.ledger(*n)
		if !slices.Equal(l.Free, []int64{700, 1000, 1000, 1000}) || strings.Join(l.Unknown, ",") != "default/stray" {
			t.Errorf("%v: free %v, unknown %v", stray.Annotations, l.Free, l.Unknown)
		}
		st := pl.Filter(context.Background(), nil, gpuPod("next", 100, "", ""), *n)
		if st.IsSuccess() || !strings.Contains(st.Message(), "1 GPU pod(s) on the node have no recorded GPU (default/stray)") {
			t.Errorf("%v: filter %v", stray.Annotations, st)
		}
		if st := pl.Filter(context.Background(), nil, pod("1", 0, 0), *n); !st.IsSuccess() {
			t.Errorf("a CPU-only pod is not the ledger's concern: %v", st)
		}
		if st := pl.Reserve(context.Background(), nil, gpuPod("next", 100, "", ""), "n"); st.IsSuccess() {
			t.Errorf("reserve beside an unknown pod: %v", st)
		}
	}
	// nominated here (preemption) but not placed: room is held where the plugin would put it, nothing unknown
	nominated := gpuPod("nominated", 800, "", "")
	l := NewBookings().NodeLedger(gpuNode("n", 2), 10000, []*v1.Pod{gpuPod("a", 300, "n", "0"), nominated})
	if !slices.Equal(l.Free, []int64{700, 200}) || len(l.Unknown) != 0 {
		t.Errorf("nominated: free %v, unknown %v", l.Free, l.Unknown)
	}
}

func TestOverbookingIsReportedNotClamped(t *testing.T) {
	// two records on one GPU beyond its 1000 milli: the excess is the ledger's Over, the GPU has nothing free
	l := NewBookings().NodeLedger(gpuNode("n", 2), 10000,
		[]*v1.Pod{gpuPod("a", 600, "n", "0"), gpuPod("b", 700, "n", "0"), gpuPod("c", 1000, "n", "1")})
	if !slices.Equal(l.Free, []int64{0, 0}) || len(l.Over) != 1 || l.Over[0] != 300 {
		t.Errorf("free %v, over %v", l.Free, l.Over)
	}
}

func TestReserveUnreserveAndBind(t *testing.T) {
	book := NewBookings()
	n := &nodeInfo{node: gpuNode("n", 2), pods: []*v1.Pod{gpuPod("a", 600, "n", "0")}}
	var bound []*v1.Binding
	pl := plugin(t, "BestFit", book, map[string]*nodeInfo{"n": n}, &bound)
	ctx := context.Background()

	p := gpuPod("p", 300, "", "")
	if st := pl.Reserve(ctx, nil, p, "n"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if g, ok := book.Booked(p.UID); !ok || !slices.Equal(g, []int{0}) { // the tightest GPU that fits 300: GPU 0 (400 free)
		t.Fatalf("booked %v %v", g, ok)
	}
	// the next cycle's snapshot holds p assumed on n, not yet annotated: its booking is its record
	p.Spec.NodeName = "n"
	n.pods = append(n.pods, p)
	q := gpuPod("q", 300, "", "")
	if st := pl.Reserve(ctx, nil, q, "n"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if g, _ := book.Booked(q.UID); !slices.Equal(g, []int{1}) { // GPU 0 has 100 left now
		t.Errorf("q booked %v, want GPU 1", g)
	}
	if st := pl.Bind(ctx, nil, p, "n"); !st.IsSuccess() || len(bound) != 1 ||
		bound[0].Annotations[IndexAnnotation] != "0" || bound[0].Target.Name != "n" || bound[0].UID != p.UID {
		t.Errorf("bind: %v %+v", st, bound)
	}
	// a failed binding: Unreserve gives the GPUs back, and the pod, still in the cache, has no record left
	pl.Unreserve(ctx, nil, p, "n")
	if _, ok := book.Booked(p.UID); ok {
		t.Error("unreserve kept the booking")
	}
	if l := pl.ledger(*n); strings.Join(l.Unknown, ",") != "default/p" {
		t.Errorf("unknown after unreserve: %v", l.Unknown)
	}
	// a pod asking for no GPU: no booking, a Binding without the annotation
	cpu := pod("1", 0, 0)
	cpu.Name, cpu.Namespace, cpu.UID = "cpu", "default", "uid-cpu"
	if st := pl.Reserve(ctx, nil, cpu, "n"); !st.IsSuccess() {
		t.Error(st)
	}
	if st := pl.Bind(ctx, nil, cpu, "n"); !st.IsSuccess() || bound[1].Annotations != nil {
		t.Errorf("cpu bind: %v %+v", st, bound[1])
	}
	// a node that filled up since Filter: Reserve says so
	full := &nodeInfo{node: gpuNode("full", 1), pods: []*v1.Pod{gpuPod("z", 1000, "full", "0")}}
	pl2 := plugin(t, "BestFit", book, map[string]*nodeInfo{"full": full}, &bound)
	if st := pl2.Reserve(ctx, nil, gpuPod("r", 300, "", ""), "full"); st.IsSuccess() ||
		!strings.Contains(st.Message(), "filled up before reserve") {
		t.Errorf("reserve on a full node: %v", st)
	}
}

func TestTwoProfilesShareOneLedger(t *testing.T) {
	// two profiles of one kube-scheduler: the pod one reserved is in the other's ledger before its annotation
	// reaches the cache, so the other cannot give the same GPU again
	n := &nodeInfo{node: gpuNode("n", 1)}
	nodes := map[string]*nodeInfo{"n": n}
	var bound []*v1.Binding
	a := plugin(t, "BestFit", nil, nodes, &bound)
	b := plugin(t, "FGD", nil, nodes, &bound)
	if a.book != b.book {
		t.Fatal("two instances of the plugin keep two records")
	}
	p := gpuPod("p-profiles", 700, "", "")
	if st := a.Reserve(context.Background(), nil, p, "n"); !st.IsSuccess() {
		t.Fatal(st)
	}
	defer ProcessBookings.Forget(p.UID)
	p.Spec.NodeName = "n"
	n.pods = []*v1.Pod{p}
	if st := b.Filter(context.Background(), nil, gpuPod("q", 500, "", ""), *n); st.IsSuccess() {
		t.Errorf("the other profile found GPU 0 free for 500 milli with 700 booked: %v", st)
	}
	if l := b.ledger(*n); !slices.Equal(l.Free, []int64{300}) || len(l.Unknown) != 0 {
		t.Errorf("the other profile's ledger: free %v, unknown %v", l.Free, l.Unknown)
	}
}

func TestDemandIsCountedAsTheNodeCountsIt(t *testing.T) {
	// the larger of the containers' sum and the largest init container, plus the pod's overhead
	p := pod("1", 0, 300)
	p.Spec.InitContainers = []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("3")}}}}
	p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}
	if d := DemandOf(p); d.CPU != 3250 || d.D != 300 || d.K != 1 || d.Invalid != "" {
		t.Errorf("%+v", d)
	}
	// a share of more than one GPU is refused in words, not read as one GPU
	big := gpuPod("big", 0, "", "")
	big.Spec.Containers[0].Resources.Requests[MilliResource] = *resource.NewQuantity(1500, resource.DecimalSI)
	d := DemandOf(big)
	if d.GPU() || !strings.Contains(d.Invalid, "kwokbench.io/gpu-milli 1500 is more than one GPU") {
		t.Errorf("%+v", d)
	}
	var bound []*v1.Binding
	n := &nodeInfo{node: gpuNode("n", 2)}
	st := plugin(t, "BestFit", NewBookings(), map[string]*nodeInfo{"n": n}, &bound).Filter(context.Background(),
		nil, big, *n)
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "ask for whole GPUs") {
		t.Errorf("filter: %v", st)
	}
	// exactly one GPU's worth of milli is one GPU
	if d := DemandOf(pod("1", 0, 1000)); d.D != 1000 || d.K != 1 || d.Invalid != "" {
		t.Errorf("1000 milli: %+v", d)
	}
}
