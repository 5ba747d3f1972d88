// Package gpushare is an out-of-tree kube-scheduler plugin: the placement policies of the FGD paper (Weng et al.,
// "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC
// '23) — Random, DotProduct, GpuClustering, GpuPacking, BestFit and FGD — in a real kube-scheduler, with a per-GPU
// ledger kept from the scheduler's own cache (no API call in Filter or Score).
//
// It reads kwokbench's extended-resource form of GPU sharing: a node advertises nvidia.com/gpu (its GPUs) and its
// model as the label nvidia.com/gpu.product; a pod asks for nvidia.com/gpu: k whole GPUs, or only
// kwokbench.io/gpu-milli: m (< 1000) of one GPU. Filter fits the pod per GPU (a share on one GPU that has it free,
// whole GPUs wholly free), which the per-node extended resources alone cannot; Score is the policy's; Reserve
// chooses the GPU(s) as the paper's policy does; Bind posts the Binding with the choice as the annotation
// kwokbench.io/gpu-index ("2", or "0-1" for whole GPUs), which the apiserver copies onto the pod: the choice is
// recorded without an extra write, and the ledger is rebuilt from it (a restarted scheduler reads it back).
//
// kwokbench compiles it into a kube-scheduler with
//
//	kwokbench tools build-scheduler plugins/gpushare
//
// and a KubeSchedulerConfiguration enables it at filter, preScore, score, reserve and bind (replacing
// DefaultBinder), with args: policy, seed (Random's draws) and workload, the target workload FGD measures
// fragmentation against (task types with weights; scenarios/configs/gpushare.yaml holds the trace's).
package gpushare

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Name is the plugin name used in KubeSchedulerConfiguration profiles.
const Name = "GPUShare"

const (
	// GPUResource counts a node's GPUs and a pod's whole GPUs.
	GPUResource v1.ResourceName = "nvidia.com/gpu"
	// MilliResource is a pod's share of one GPU, in milli-GPU (a whole-GPU pod asks 1000 per GPU too).
	MilliResource v1.ResourceName = "kwokbench.io/gpu-milli"
	// ModelLabel is the node label of its GPU model (NVIDIA GPU feature discovery's).
	ModelLabel = "nvidia.com/gpu.product"
	// IndexAnnotation records the GPU(s) a pod was given: "2", or "0-1" for whole GPUs.
	IndexAnnotation = "kwokbench.io/gpu-index"
)

// Policies are the paper's placement policies, by the names the args take.
var Policies = []string{"Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD"}

// Task is one type of the target workload in the args.
type Task struct {
	CPU      int64    `json:"cpu"`      // milli-cores
	GPUMilli int64    `json:"gpuMilli"` // a share of one GPU (< 1000), or 0
	GPUs     int64    `json:"gpus"`     // whole GPUs, or 0
	Models   []string `json:"models,omitempty"`
	Weight   float64  `json:"weight"`
}

// Args are the plugin's pluginConfig args.
type Args struct {
	Policy   string `json:"policy"`
	Seed     int64  `json:"seed"`
	Workload []Task `json:"workload"`
	// TieBreak among nodes of equal score: "random" (kube-scheduler's own: uniformly among them) or
	// "nodeOrder" (the paper's simulator: the first in a node order fixed by the seed, so that equal nodes fill
	// one after another).
	TieBreak string `json:"tieBreak"`
}

// GPUShare implements Filter, PreScore, Score, Reserve and Bind.
type GPUShare struct {
	policy   string
	workload []TaskType
	ordered  bool  // tieBreak nodeOrder
	seed     int64 // of the node order
	book     *Bookings
	// nodeInfo is a node of the cycle's snapshot, bind posts a Binding (the handle's; tests give their own)
	nodeInfo func(name string) (fwk.NodeInfo, error)
	bind     func(ctx context.Context, b *v1.Binding) error

	mu  sync.Mutex // of rnd
	rnd *rand.Rand
}

// Bookings is the process's one record of the GPUs it chose for each pod, from Reserve until the pod is gone.
// Every profile's instance of the plugin shares it (ProcessBookings): a pod reserved by one profile is in the
// ledger of the others before its annotation reaches the scheduler's cache, so two profiles of one
// kube-scheduler cannot book one GPU twice.
type Bookings struct {
	mu    sync.RWMutex
	byPod map[types.UID][]int

	reportMu sync.Mutex
	reported map[string]bool // what was logged already: a node's unknown pod or overbooked GPU, once each
}

// NewBookings is an empty record (ProcessBookings is the process's; tests make their own).
func NewBookings() *Bookings {
	return &Bookings{byPod: map[types.UID][]int{}, reported: map[string]bool{}}
}

// ProcessBookings is the record every instance of the plugin in this process shares.
var ProcessBookings = NewBookings()

// Book records the GPUs chosen for a pod (Reserve); Forget drops them (Unreserve, or the pod deleted).
func (b *Bookings) Book(uid types.UID, gpus []int) {
	b.mu.Lock()
	b.byPod[uid] = gpus
	b.mu.Unlock()
}

// Forget drops a pod's booking.
func (b *Bookings) Forget(uid types.UID) {
	b.mu.Lock()
	delete(b.byPod, uid)
	b.mu.Unlock()
}

// Booked is a pod's booking, if this process made one.
func (b *Bookings) Booked(uid types.UID) ([]int, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	g, ok := b.byPod[uid]
	return g, ok
}

var (
	_ fwk.FilterPlugin   = &GPUShare{}
	_ fwk.PreScorePlugin = &GPUShare{}
	_ fwk.ScorePlugin    = &GPUShare{}
	_ fwk.ReservePlugin  = &GPUShare{}
	_ fwk.BindPlugin     = &GPUShare{}
)

// ParseArgs reads the args (JSON, as kube-scheduler hands an out-of-tree plugin's args over).
func ParseArgs(raw []byte) (Args, []TaskType, error) {
	var a Args
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a); err != nil {
			return a, nil, fmt.Errorf("%s args: %w", Name, err)
		}
	}
	if a.Policy == "" {
		a.Policy = "FGD"
	}
	if a.TieBreak == "" {
		a.TieBreak = "random"
	}
	if a.TieBreak != "random" && a.TieBreak != "nodeOrder" {
		return a, nil, fmt.Errorf("%s args: tieBreak %q is neither random nor nodeOrder", Name, a.TieBreak)
	}
	known := false
	for _, p := range Policies {
		known = known || p == a.Policy
	}
	if !known {
		return a, nil, fmt.Errorf("%s args: policy %q is none of %s", Name, a.Policy, strings.Join(Policies, ", "))
	}
	var w []TaskType
	for i, t := range a.Workload {
		d := Demand{CPU: t.CPU, Models: t.Models}
		switch {
		case t.GPUs > 0:
			d.D, d.K = MilliPerGPU, t.GPUs
		case t.GPUMilli > 0 && t.GPUMilli < MilliPerGPU:
			d.D, d.K = t.GPUMilli, 1
		case t.GPUMilli != 0:
			return a, nil, fmt.Errorf("%s args: workload[%d]: gpuMilli %d is not a share of one GPU (1..999)",
				Name, i, t.GPUMilli)
		}
		if t.Weight <= 0 {
			return a, nil, fmt.Errorf("%s args: workload[%d]: weight %v is not positive", Name, i, t.Weight)
		}
		w = append(w, TaskType{Demand: d, Weight: t.Weight})
	}
	if a.Policy == "FGD" && len(w) == 0 {
		return a, nil, fmt.Errorf("%s args: policy FGD needs the target workload (workload: [...])", Name)
	}
	return a, w, nil
}

// New is the plugin factory.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	var raw []byte
	if u, ok := obj.(*runtime.Unknown); ok && u != nil {
		raw = u.Raw
	}
	a, w, err := ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	p := &GPUShare{policy: a.Policy, workload: w, ordered: a.TieBreak == "nodeOrder", seed: a.Seed,
		rnd: rand.New(rand.NewSource(a.Seed)), book: ProcessBookings}
	if h == nil {
		return p, nil
	}
	p.nodeInfo = func(name string) (fwk.NodeInfo, error) { return h.SnapshotSharedLister().NodeInfos().Get(name) }
	p.bind = func(ctx context.Context, b *v1.Binding) error {
		return h.ClientSet().CoreV1().Pods(b.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	}
	if h.SharedInformerFactory() != nil {
		// a deleted pod's booking goes with it (Unreserve covers pods that never bound)
		_, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(
			cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				if pod, ok := obj.(*v1.Pod); ok {
					p.book.Forget(pod.UID)
				}
			}})
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Name returns the plugin name.
func (*GPUShare) Name() string { return Name }

// DemandOf is a pod's demand as the node's scheduler cache counts it (resourcehelper.PodRequests: the larger of
// its containers' sum and its largest init container, sidecars and pod overhead included) and the GPU models its
// required node affinity accepts. A share of more than one GPU is no demand this plugin can place: Invalid says so.
func DemandOf(pod *v1.Pod) Demand {
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	gpuQ, milliQ := req[GPUResource], req[MilliResource]
	gpus, milli := gpuQ.Value(), milliQ.Value()
	d := Demand{CPU: req.Cpu().MilliValue(), Models: models(pod)}
	switch {
	case gpus > 0:
		d.D, d.K = MilliPerGPU, gpus
	case milli > MilliPerGPU:
		d.Invalid = fmt.Sprintf("%s %d is more than one GPU (%d): ask for whole GPUs with %s", MilliResource, milli,
			MilliPerGPU, GPUResource)
	case milli > 0:
		d.D, d.K = milli, 1
	}
	return d
}

func models(pod *v1.Pod) []string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key == ModelLabel && e.Operator == v1.NodeSelectorOpIn {
				return e.Values
			}
		}
	}
	return nil
}

// ParseIndex reads the annotation's GPU indexes (nil if absent or malformed).
func ParseIndex(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(s, "-") {
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 {
			return nil
		}
		out = append(out, i)
	}
	return out
}

// FormatIndex writes GPU indexes as the annotation does.
func FormatIndex(gpus []int) string {
	s := make([]string, len(gpus))
	for i, g := range gpus {
		s[i] = strconv.Itoa(g)
	}
	return strings.Join(s, "-")
}

// Ledger is one node's per-GPU state from the GPU pods on it (bound, assumed or nominated): what each GPU has
// free for the policies, the GPU pods' classes, and what could not be accounted for — reported, never hidden.
type Ledger struct {
	Node
	Tags map[string]int
	// Over is each GPU booked beyond MilliPerGPU, by how much (its Free is then 0 for the policies).
	Over map[int]int64
	// Unknown names the GPU pods placed on the node (bound or assumed) whose GPUs no record gives: no booking of
	// this process, no annotation, or one this node cannot have. Their GPUs are not guessed (a guess could give
	// their GPU to another pod), so the node takes no GPU pod while they are on it.
	Unknown []string
}

// NodeLedger builds a node's ledger from the pods on it; cpuLeft is its allocatable CPU minus what the scheduler's
// cache counts as requested.
func (b *Bookings) NodeLedger(node *v1.Node, cpuLeft int64, pods []*v1.Pod) Ledger {
	l := Ledger{Node: Node{CPULeft: cpuLeft}, Tags: map[string]int{}, Over: map[int]int64{}}
	if q, ok := node.Status.Allocatable[GPUResource]; ok {
		l.Free = make([]int64, q.Value())
		for i := range l.Free {
			l.Free[i] = MilliPerGPU
		}
		l.Model = node.Labels[ModelLabel]
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, pod := range pods {
		d := DemandOf(pod)
		if !d.GPU() {
			continue
		}
		l.Tags[Tag(d)]++
		gpus, ok := b.byPod[pod.UID]
		if !ok {
			gpus = ParseIndex(pod.Annotations[IndexAnnotation])
		}
		if !valid(l.Node, d, gpus) {
			if pod.Spec.NodeName != "" {
				l.Unknown = append(l.Unknown, pod.Namespace+"/"+pod.Name)
				continue
			}
			// nominated here (preemption), not placed: room is held where the plugin would put it
			gpus = defaultGPUs(l.Node, d)
		}
		for _, i := range gpus {
			l.Free[i] -= d.D
		}
	}
	for i, f := range l.Free {
		if f < 0 {
			l.Over[i], l.Free[i] = -f, 0
		}
	}
	return l
}

// report logs what a node's ledger could not account for, once per node and pod or GPU.
func (b *Bookings) report(node string, l Ledger) {
	if len(l.Unknown) == 0 && len(l.Over) == 0 {
		return
	}
	b.reportMu.Lock()
	defer b.reportMu.Unlock()
	for _, p := range l.Unknown {
		if k := node + "/" + p; !b.reported[k] {
			b.reported[k] = true
			klog.InfoS("GPUShare: a GPU pod on the node has no recorded GPU; the node takes no GPU pod while it is there",
				"node", node, "pod", p)
		}
	}
	for i, over := range l.Over {
		if k := fmt.Sprintf("%s/gpu-%d", node, i); !b.reported[k] {
			b.reported[k] = true
			klog.ErrorS(nil, "GPUShare: a GPU is booked beyond its capacity", "node", node, "gpu", i, "overMilli", over)
		}
	}
}

// ledger is a cycle's node as a Ledger.
func (pl *GPUShare) ledger(ni fwk.NodeInfo) Ledger {
	infos := ni.GetPods()
	pods := make([]*v1.Pod, len(infos))
	for i, pi := range infos {
		pods[i] = pi.GetPod()
	}
	l := pl.book.NodeLedger(ni.Node(), ni.GetAllocatable().GetMilliCPU()-ni.GetRequested().GetMilliCPU(), pods)
	pl.book.report(ni.Node().Name, l)
	return l
}

// valid: as many GPUs as the pod asks for, each one the node has, none twice.
func valid(n Node, d Demand, gpus []int) bool {
	if int64(len(gpus)) != d.K {
		return false
	}
	seen := map[int]bool{}
	for _, i := range gpus {
		if i >= len(n.Free) || seen[i] {
			return false
		}
		seen[i] = true
	}
	return true
}

func defaultGPUs(n Node, d Demand) []int {
	if d.D < MilliPerGPU {
		if i := TightestGPU(n, d.D); i >= 0 {
			return []int{i}
		}
		return nil
	}
	return WholeGPUs(n, d.K)
}

// Filter fits the pod per GPU.
func (pl *GPUShare) Filter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	d := DemandOf(pod)
	if d.Invalid != "" {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, d.Invalid)
	}
	if !d.GPU() {
		return nil
	}
	l := pl.ledger(ni)
	n := l.Node
	if len(n.Free) == 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node has no GPU")
	}
	if len(l.Unknown) > 0 {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%d GPU pod(s) on the node have no recorded GPU (%s): "+
			"a GPU chosen here could be theirs", len(l.Unknown), strings.Join(l.Unknown, ", ")))
	}
	if !Fits(n, d) {
		if d.D < MilliPerGPU {
			return fwk.NewStatus(fwk.Unschedulable, "no single GPU has the share free")
		}
		return fwk.NewStatus(fwk.Unschedulable, "too few wholly free GPUs")
	}
	return nil
}

const chosenKey fwk.StateKey = Name + "/chosen"

type chosen struct{ node string }

func (c *chosen) Clone() fwk.StateData { return c }

// Rank is a node's place in the order fixed by the seed: the simulator's tie-break takes the first of the nodes
// with the best score in an order that is a uniformly random permutation (rand.Perm). FNV-1a of the seed and the
// name, then splitmix64's finaliser: FNV-1a alone is no such order for names that differ in their last
// characters (kb-openb-0-41, kb-openb-0-42, ...): their hashes differ by a multiple of the last byte's XOR, so
// the order followed the names' structure, and FGD, whose coarse score ties often, allocated 90.9% of the trace's
// GPUs in that order against 95.5% in a random one (the same pod list, offline).
func Rank(seed int64, node string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(strconv.FormatInt(seed, 10) + "/" + node))
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// PreScore picks the node itself where the choice among equals is not kube-scheduler's: Random draws one of
// the feasible nodes uniformly; with tieBreak nodeOrder every policy takes its best node, the first in the seed's
// node order among equals. Score then gives that node 100 and the others 0.
func (pl *GPUShare) PreScore(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if len(nodes) == 0 || (pl.policy != "Random" && !pl.ordered) {
		return nil
	}
	if pl.policy == "Random" {
		pl.mu.Lock()
		j := pl.rnd.Intn(len(nodes))
		pl.mu.Unlock()
		state.Write(chosenKey, &chosen{nodes[j].Node().Name})
		return nil
	}
	d := DemandOf(pod)
	best, winner, first := int64(-1), "", uint64(0)
	for _, ni := range nodes {
		name := ni.Node().Name
		s := pl.score(ni, d)
		if r := Rank(pl.seed, name); s > best || (s == best && r < first) {
			best, winner, first = s, name, r
		}
	}
	state.Write(chosenKey, &chosen{winner})
	return nil
}

func (pl *GPUShare) score(ni fwk.NodeInfo, d Demand) int64 {
	l := pl.ledger(ni)
	n, tags := l.Node, l.Tags
	switch pl.policy {
	case "DotProduct":
		return DotProduct(n, d)
	case "GpuClustering":
		return clamp(GpuClustering(n, d, tags))
	case "GpuPacking":
		return clamp(GpuPacking(n, d))
	case "BestFit":
		return clamp(BestFitRaw(n, d))
	default:
		s, _ := FGD(n, d, pl.workload)
		return s
	}
}

// Score is the policy's score of the node, 0..100 (BestFit's is normalised over the nodes afterwards), or 100
// for the node PreScore picked and 0 for the others.
func (pl *GPUShare) Score(_ context.Context, state fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	if pl.policy == "Random" || pl.ordered {
		if c, err := state.Read(chosenKey); err == nil && c.(*chosen).node == ni.Node().Name {
			return 100, nil
		}
		return 0, nil
	}
	return pl.score(ni, DemandOf(pod)), nil
}

// ScoreExtensions normalises BestFit's scores over the scored nodes, as the paper's simulator does.
func (pl *GPUShare) ScoreExtensions() fwk.ScoreExtensions {
	if pl.policy == "BestFit" && !pl.ordered {
		return pl
	}
	return nil
}

// NormalizeScore maps the scores' range onto 0..100 (all equal: 0).
func (pl *GPUShare) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi == lo {
			scores[i].Score = 0
		} else {
			scores[i].Score = (scores[i].Score - lo) * 100 / (hi - lo)
		}
	}
	return nil
}

// Choose is the policy's GPU choice for a pod on a node (nil: none fits, or the pod asks for no GPU).
func (pl *GPUShare) Choose(n Node, d Demand) []int {
	if !d.GPU() {
		return nil
	}
	if d.D >= MilliPerGPU {
		return WholeGPUs(n, d.K)
	}
	var i int
	switch pl.policy {
	case "FGD":
		_, g := FGD(n, d, pl.workload)
		if g == nil {
			return nil
		}
		return g
	case "Random":
		pl.mu.Lock()
		i = RandomGPU(n, d.D, pl.rnd)
		pl.mu.Unlock()
	default:
		i = TightestGPU(n, d.D)
	}
	if i < 0 {
		return nil
	}
	return []int{i}
}

// Reserve chooses the pod's GPU(s) on the node from the cycle's snapshot and books them until the pod is gone
// or unreserved (the booking, then the pod's annotation, is its record).
func (pl *GPUShare) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	d := DemandOf(pod)
	if !d.GPU() {
		return nil
	}
	ni, err := pl.nodeInfo(nodeName)
	if err != nil {
		return fwk.AsStatus(err)
	}
	l := pl.ledger(ni)
	if len(l.Unknown) > 0 {
		return fwk.NewStatus(fwk.Unschedulable, "a GPU pod without a recorded GPU came onto the node before reserve")
	}
	gpus := pl.Choose(l.Node, d)
	if gpus == nil {
		return fwk.NewStatus(fwk.Unschedulable, "the GPUs filled up before reserve")
	}
	pl.book.Book(pod.UID, gpus)
	return nil
}

// Unreserve gives the GPUs back.
func (pl *GPUShare) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	pl.book.Forget(pod.UID)
}

// Bind posts the Binding, with the GPU choice as an annotation the apiserver copies onto the pod.
func (pl *GPUShare) Bind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if gpus, ok := pl.book.Booked(pod.UID); ok {
		b.Annotations = map[string]string{IndexAnnotation: FormatIndex(gpus)}
	}
	if err := pl.bind(ctx, b); err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}
