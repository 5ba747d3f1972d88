package gpushare

import (
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// exampleA: a T4 node with 8 cores left and GPUs 1000, 500, 300 and 0 milli free (1800 idle).
var exampleA = Node{CPULeft: 8000, Free: []int64{1000, 500, 300, 0}, Model: "T4"}

// workloadA: a share of 400, one whole GPU, and a CPU-only task, at 0.5, 0.3 and 0.2.
var workloadA = []TaskType{
	{Demand{CPU: 2000, D: 400, K: 1}, 0.5},
	{Demand{CPU: 4000, D: 1000, K: 1}, 0.3},
	{Demand{CPU: 1000}, 0.2},
}

// The fragmentation measure's cases, each worked by hand from the paper's definition: a task that fits leaves
// as fragments the GPUs with less free than it asks per GPU; a task the node cannot host (no GPU asked, a model
// it does not accept, too little CPU or too few GPUs) finds every idle GPU milli a fragment.
func TestFragOfEachCase(t *testing.T) {
	for _, c := range []struct {
		name string
		m    Demand
		want int64
	}{
		{"a share fits: GPUs below 400 free are fragments", Demand{CPU: 2000, D: 400, K: 1}, 300},
		{"one whole GPU fits: the partly used GPUs are fragments", Demand{CPU: 4000, D: 1000, K: 1}, 800},
		{"two whole GPUs do not fit", Demand{CPU: 4000, D: 1000, K: 2}, 1800},
		{"a CPU-only task uses no GPU", Demand{CPU: 1000}, 1800},
		{"another model", Demand{CPU: 2000, D: 400, K: 1, Models: []string{"V100M16", "V100M32"}}, 1800},
		{"too little CPU", Demand{CPU: 10000, D: 400, K: 1}, 1800},
	} {
		if got := FragOf(exampleA, c.m); got != c.want {
			t.Errorf("%s: F = %d, want %d", c.name, got, c.want)
		}
	}
	if got := Frag(exampleA, workloadA); got != 750 { // 0.5·300 + 0.3·800 + 0.2·1800
		t.Errorf("F(M) = %v, want 750", got)
	}
	// weights need not sum to one: the measure is popularity-weighted
	doubled := []TaskType{{workloadA[0].Demand, 1}, {workloadA[1].Demand, 0.6}, {workloadA[2].Demand, 0.4}}
	if got := Frag(exampleA, doubled); got != 750 {
		t.Errorf("F(M) with unnormalised weights = %v, want 750", got)
	}
	// a node of 4 GPUs, no CPU left: every idle GPU is a fragment for every task
	full := Node{CPULeft: 0, Free: []int64{1000, 1000, 1000, 1000, 0, 0, 0, 0}}
	if got := Frag(full, workloadA); got != 4000 {
		t.Errorf("F(M) on a CPU-full node = %v, want 4000", got)
	}
	if got := Frag(Node{CPULeft: 64000}, workloadA); got != 0 {
		t.Errorf("F(M) on a node without GPUs = %v, want 0", got)
	}
}

// FGD on example A: a 400-milli share on GPU 0 adds 100 of fragmentation (F 750 → 850), on GPU 1 removes 150
// (→ 600: GPU 1 keeps 100, below 400, but the 1000 of GPU 0 stays usable): GPU 1, score int(100·σ(0.15)) = 53.
func TestFGDPicksTheGPUThatAddsLeastFragmentation(t *testing.T) {
	s, gpus := FGD(exampleA, Demand{CPU: 2000, D: 400, K: 1}, workloadA)
	if s != 53 || len(gpus) != 1 || gpus[0] != 1 {
		t.Errorf("FGD = %d on %v, want 53 on [1]", s, gpus)
	}
	if s, gpus := FGD(exampleA, Demand{CPU: 4000, D: 1000, K: 1}, workloadA); s != 54 || gpus[0] != 0 {
		t.Errorf("FGD whole GPU = %d on %v, want 54 on [0] (F 750 → 550)", s, gpus)
	}
	if s, gpus := FGD(exampleA, Demand{CPU: 7000}, workloadA); s != 25 || gpus != nil {
		t.Errorf("FGD CPU-only = %d on %v, want 25 (F 750 → 1800: the node's CPU is gone)", s, gpus)
	}
	if _, gpus := FGD(exampleA, Demand{CPU: 2000, D: 600, K: 1}, workloadA); len(gpus) != 1 || gpus[0] != 0 {
		t.Errorf("a 600 share fits GPU 0 only: got %d on %v", s, gpus)
	}
}

func TestTheOtherPoliciesOnExampleA(t *testing.T) {
	share := Demand{CPU: 2000, D: 400, K: 1}
	// BestFit: 100·(1 − (½·6000/128000 + ½·1400/8000)) = 88.9
	if got := BestFitRaw(exampleA, share); got != 88 {
		t.Errorf("BestFit raw = %d, want 88", got)
	}
	// DotProduct: a·b = 8000/128000·2000/128000 + 1800/8000·400/8000 = 0.0122: 100·(1 − 0.0061) = 99.4
	if got := DotProduct(exampleA, share); got != 99 {
		t.Errorf("DotProduct = %d, want 99", got)
	}
	// GpuPacking: partly used node; the tightest GPUs taking 400 are GPU 1 (500 free), not wholly free:
	// max(100 − (500·100/1000)/10, 50) = 95
	if got := GpuPacking(exampleA, share); got != 95 {
		t.Errorf("GpuPacking = %d, want 95", got)
	}
	if got := GpuPacking(Node{Free: []int64{1000, 1000}}, share); got != 31 { // empty node of 2 GPUs: max(33−2, 2)
		t.Errorf("GpuPacking on an empty node = %d, want 31", got)
	}
	if got := GpuPacking(Node{Free: []int64{1000, 300}}, share); got != 49 { // must open a GPU: max(50−1, 33)
		t.Errorf("GpuPacking opening a GPU = %d, want 49", got)
	}
	// GpuClustering: base 25·(8000−1800)/8000 = 19; all of the node's GPU pods are shares: +75
	if got := GpuClustering(exampleA, share, map[string]int{"share": 3}); got != 94 {
		t.Errorf("GpuClustering = %d, want 94", got)
	}
	if got := GpuClustering(exampleA, share, map[string]int{"share": 1, "1-gpu": 1}); got != 69 {
		t.Errorf("GpuClustering, mixed = %d, want 69", got)
	}
	if got := GpuClustering(exampleA, Demand{CPU: 1}, nil); got != 0 {
		t.Errorf("GpuClustering of a CPU-only pod = %d, want 0", got)
	}
	// the GPU choices: the tightest GPU taking the share, whole GPUs lowest index first
	if TightestGPU(exampleA, 400) != 1 || TightestGPU(exampleA, 250) != 2 || TightestGPU(exampleA, 1001) != -1 {
		t.Errorf("TightestGPU wrong")
	}
	if g := WholeGPUs(Node{Free: []int64{300, 1000, 1000, 1000}}, 2); len(g) != 2 || g[0] != 1 || g[1] != 2 {
		t.Errorf("WholeGPUs = %v, want [1 2]", g)
	}
	// Random's GPU is uniform over the GPUs that take the share (GPUs 0, 1: 1000 and 500 free)
	r, seen := rand.New(rand.NewSource(42)), map[int]int{}
	for range 2000 {
		seen[RandomGPU(exampleA, 400, r)]++
	}
	if len(seen) != 2 || seen[0] < 900 || seen[1] < 900 {
		t.Errorf("RandomGPU drew %v", seen)
	}
}

func TestFitsPerGPU(t *testing.T) {
	// 800 milli idle on the node, but no single GPU has 700: the per-node count would take it, this does not
	two := Node{CPULeft: 8000, Free: []int64{400, 400}, Model: "T4"}
	if Fits(two, Demand{CPU: 1000, D: 700, K: 1}) {
		t.Error("a 700 share fitted two GPUs of 400 free")
	}
	if !Fits(two, Demand{CPU: 1000, D: 400, K: 1}) || Fits(two, Demand{CPU: 1000, D: 1000, K: 1}) {
		t.Error("Fits wrong on shares and whole GPUs")
	}
	if Fits(two, Demand{CPU: 1000, D: 400, K: 1, Models: []string{"A100"}}) {
		t.Error("a pod for A100s fitted a T4")
	}
}

func pod(cpu string, gpus, milli int64, models ...string) *v1.Pod {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	if gpus > 0 {
		req[GPUResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	if milli > 0 {
		req[MilliResource] = *resource.NewQuantity(milli, resource.DecimalSI)
	}
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: req}}}}}
	if len(models) > 0 {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
				{MatchExpressions: []v1.NodeSelectorRequirement{
					{Key: ModelLabel, Operator: v1.NodeSelectorOpIn, Values: models}}}}}}}
	}
	return p
}

func TestDemandOfKwokbenchsForm(t *testing.T) {
	// a whole-GPU pod asks nvidia.com/gpu: k and 1000·k milli; a share asks the milli only
	if d := DemandOf(pod("1500m", 2, 2000)); d.CPU != 1500 || d.D != 1000 || d.K != 2 {
		t.Errorf("whole GPUs: %+v", d)
	}
	if d := DemandOf(pod("3152m", 0, 810, "T4", "P100")); d.D != 810 || d.K != 1 || len(d.Models) != 2 {
		t.Errorf("share: %+v", d)
	}
	if d := DemandOf(pod("12", 0, 0)); d.GPU() || d.CPU != 12000 {
		t.Errorf("CPU-only: %+v", d)
	}
}

func TestArgs(t *testing.T) {
	a, w, err := ParseArgs([]byte(`{"policy":"BestFit","seed":7,"workload":[{"cpu":3152,"gpuMilli":810,"weight":1047},` +
		`{"cpu":11300,"gpus":1,"weight":874},{"cpu":12500,"weight":366}]}`))
	if err != nil || a.Policy != "BestFit" || a.Seed != 7 || len(w) != 3 {
		t.Fatalf("%+v %v %v", a, w, err)
	}
	if w[0].D != 810 || w[1].D != 1000 || w[1].K != 1 || w[2].GPU() {
		t.Errorf("workload %+v", w)
	}
	for raw, want := range map[string]string{
		`{"policy":"Tetris"}`: `policy "Tetris" is none of`,
		`{"policy":"FGD"}`:    `needs the target workload`,
		`{"workload":[{"cpu":1,"gpuMilli":1200,"weight":1}]}`: `gpuMilli 1200 is not a share`,
		`{"policy":"Random","workload":[{"cpu":1}]}`:          `weight 0 is not positive`,
	} {
		if _, _, err := ParseArgs([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	if a.TieBreak != "random" {
		t.Errorf("tieBreak defaults to kube-scheduler's own: %q", a.TieBreak)
	}
	// the simulator's node order: fixed by the seed, another seed another order
	if Rank(42, "n1") != Rank(42, "n1") || Rank(42, "n1") == Rank(43, "n1") || Rank(42, "n1") == Rank(42, "n2") {
		t.Errorf("Rank is not a seeded order")
	}
	if g := ParseIndex("0-3"); len(g) != 2 || g[1] != 3 || FormatIndex(g) != "0-3" || ParseIndex("x") != nil {
		t.Errorf("index annotation round trip")
	}
}

// The tie-break order is a random permutation, not one that follows the names: kwokbench's node names differ only
// in a group and an index (kb-openb-<group>-<i>), and FNV-1a alone ranked 97.7% of neighbours in the same group
// (the nodes of one shape one after another), against 1 in 15 for a random order.
func TestRankOrderIsNotTheNamesOrder(t *testing.T) {
	type ranked struct {
		group int
		r     uint64
	}
	var ns []ranked
	for g := 0; g < 15; g++ {
		for i := 0; i < 81; i++ {
			ns = append(ns, ranked{g, Rank(42, "kb-openb-"+strconv.Itoa(g)+"-"+strconv.Itoa(i))})
		}
	}
	sort.Slice(ns, func(a, b int) bool { return ns[a].r < ns[b].r })
	same := 0
	for k := 1; k < len(ns); k++ {
		if ns[k].group == ns[k-1].group {
			same++
		}
	}
	if share := float64(same) / float64(len(ns)-1); share > 0.12 {
		t.Fatalf("%.3f of neighbours in the rank order share a group; a random order gives about 0.067", share)
	}
}
