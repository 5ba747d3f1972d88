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
	h        fwk.Handle
	policy   string
	workload []TaskType
	ordered  bool  // tieBreak nodeOrder
	seed     int64 // of the node order

	mu       sync.RWMutex
	rnd      *rand.Rand
	reserved map[types.UID][]int // GPUs reserved, until the pod's own annotation says so or it is gone
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
	p := &GPUShare{h: h, policy: a.Policy, workload: w, ordered: a.TieBreak == "nodeOrder", seed: a.Seed,
		rnd: rand.New(rand.NewSource(a.Seed)), reserved: map[types.UID][]int{}}
	if h != nil && h.SharedInformerFactory() != nil {
		// a deleted pod's reservation goes with it (Unreserve covers pods that never bound)
		_, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(
			cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				if pod, ok := obj.(*v1.Pod); ok {
					p.mu.Lock()
					delete(p.reserved, pod.UID)
					p.mu.Unlock()
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

// DemandOf is a pod's demand: its containers' CPU and GPU requests and the GPU models its required node
// affinity accepts.
func DemandOf(pod *v1.Pod) Demand {
	var cpu, gpus, milli int64
	for _, c := range pod.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		if q, ok := c.Resources.Requests[GPUResource]; ok {
			gpus += q.Value()
		}
		if q, ok := c.Resources.Requests[MilliResource]; ok {
			milli += q.Value()
		}
	}
	d := Demand{CPU: cpu, Models: models(pod)}
	switch {
	case gpus > 0:
		d.D, d.K = MilliPerGPU, gpus
	case milli > 0:
		d.D, d.K = min(milli, MilliPerGPU), 1
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

// ledger is a node's per-GPU state from the pods on it (bound or assumed), and its GPU pods' classes.
func (pl *GPUShare) ledger(ni fwk.NodeInfo) (Node, map[string]int) {
	node := ni.Node()
	n := Node{CPULeft: ni.GetAllocatable().GetMilliCPU() - ni.GetRequested().GetMilliCPU()}
	if q, ok := node.Status.Allocatable[GPUResource]; ok {
		n.Free = make([]int64, q.Value())
		for i := range n.Free {
			n.Free[i] = MilliPerGPU
		}
		n.Model = node.Labels[ModelLabel]
	}
	tags := map[string]int{}
	pl.mu.RLock()
	defer pl.mu.RUnlock()
	for _, pi := range ni.GetPods() {
		pod := pi.GetPod()
		d := DemandOf(pod)
		if !d.GPU() {
			continue
		}
		tags[Tag(d)]++
		gpus, ok := pl.reserved[pod.UID]
		if !ok {
			gpus = ParseIndex(pod.Annotations[IndexAnnotation])
		}
		if !valid(n, d, gpus) { // placed without a record (another binder): where this plugin would have put it
			gpus = defaultGPUs(n, d)
		}
		for _, i := range gpus {
			n.Free[i] = max(n.Free[i]-d.D, 0)
		}
	}
	return n, tags
}

func valid(n Node, d Demand, gpus []int) bool {
	if int64(len(gpus)) != d.K {
		return false
	}
	for _, i := range gpus {
		if i >= len(n.Free) {
			return false
		}
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
	if !d.GPU() {
		return nil
	}
	n, _ := pl.ledger(ni)
	if len(n.Free) == 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node has no GPU")
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
	n, tags := pl.ledger(ni)
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

// Reserve chooses the pod's GPU(s) on the node from the cycle's snapshot and holds them until the pod is bound
// (its annotation then says so) or unreserved.
func (pl *GPUShare) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	d := DemandOf(pod)
	if !d.GPU() {
		return nil
	}
	ni, err := pl.h.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return fwk.AsStatus(err)
	}
	n, _ := pl.ledger(ni)
	gpus := pl.Choose(n, d)
	if gpus == nil {
		return fwk.NewStatus(fwk.Unschedulable, "the GPUs filled up before reserve")
	}
	pl.mu.Lock()
	pl.reserved[pod.UID] = gpus
	pl.mu.Unlock()
	return nil
}

// Unreserve gives the GPUs back.
func (pl *GPUShare) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	pl.mu.Lock()
	delete(pl.reserved, pod.UID)
	pl.mu.Unlock()
}

// Bind posts the Binding, with the GPU choice as an annotation the apiserver copies onto the pod.
func (pl *GPUShare) Bind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	pl.mu.RLock()
	gpus, ok := pl.reserved[pod.UID]
	pl.mu.RUnlock()
	if ok {
		b.Annotations = map[string]string{IndexAnnotation: FormatIndex(gpus)}
	}
	if err := pl.h.ClientSet().CoreV1().Pods(b.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}
