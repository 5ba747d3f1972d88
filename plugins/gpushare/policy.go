package gpushare

import (
	"math"
	"math/rand"
	"sort"
)

// MilliPerGPU is one whole GPU in milli-GPU.
const MilliPerGPU = 1000

// Node is what every policy reads of a node: CPU left, each GPU's free milli, the GPU model.
type Node struct {
	CPULeft int64   // milli-cores
	Free    []int64 // per GPU, 0..MilliPerGPU
	Model   string  // "" for a node without GPUs
}

// Idle is the node's idle GPU milli, G_n.
func (n Node) Idle() int64 {
	var g int64
	for _, f := range n.Free {
		g += f
	}
	return g
}

func (n Node) fitting(d int64) int {
	c := 0
	for _, f := range n.Free {
		if f >= d {
			c++
		}
	}
	return c
}

// Demand is a pod's (or a task type's) request: CPU milli, GPU milli per GPU and GPU count (a sharing pod:
// D < 1000, K = 1; whole GPUs: D = 1000, K >= 1; CPU-only: D = K = 0), and the GPU models it accepts (none: any).
type Demand struct {
	CPU    int64
	D      int64
	K      int64
	Models []string
	// Invalid says why the pod's GPU request is none the plugin can place ("" for a valid one).
	Invalid string
}

// GPU reports whether the demand asks for GPU at all.
func (d Demand) GPU() bool { return d.D > 0 && d.K > 0 }

// Total is the GPU milli requested, D·K.
func (d Demand) Total() int64 { return d.D * d.K }

func (d Demand) allows(model string) bool {
	if len(d.Models) == 0 {
		return true
	}
	for _, m := range d.Models {
		if m == model {
			return true
		}
	}
	return false
}

// Fits is the per-GPU fit: enough CPU, an accepted model, and D free on one GPU (sharing) or K GPUs wholly free.
// Memory and pod count are NodeResourcesFit's.
func Fits(n Node, d Demand) bool {
	if d.CPU > n.CPULeft {
		return false
	}
	if !d.GPU() {
		return true
	}
	return len(n.Free) > 0 && d.allows(n.Model) && int64(n.fitting(d.D)) >= d.K
}

// TaskType is one entry of the target workload: a demand and its popularity (weights need not sum to 1).
type TaskType struct {
	Demand
	Weight float64
}

// FragOf is F_n(m), the GPU milli of node n that task type m cannot use: every idle GPU milli when m asks for no
// GPU, cannot use the node's model, or does not fit (CPU or GPU); otherwise the free milli of the GPUs with less
// free than m asks per GPU.
func FragOf(n Node, m Demand) int64 {
	g := n.Idle()
	if !m.GPU() || !m.allows(n.Model) || !Fits(n, m) {
		return g
	}
	var f int64
	for _, free := range n.Free {
		if free < m.D {
			f += free
		}
	}
	return f
}

// Frag is F_n(M) = Σ_m p_m F_n(m), the popularity-weighted fragmentation of node n for the target workload.
func Frag(n Node, workload []TaskType) float64 {
	var f, total float64
	for _, m := range workload {
		f += m.Weight * float64(FragOf(n, m.Demand))
		total += m.Weight
	}
	if total == 0 {
		return 0
	}
	return f / total
}

// After is the node once the pod is placed on GPUs gpus (a sharing pod: one index; whole GPUs: K indexes).
func After(n Node, d Demand, gpus []int) Node {
	out := Node{CPULeft: n.CPULeft - d.CPU, Free: append([]int64(nil), n.Free...), Model: n.Model}
	for _, i := range gpus {
		out.Free[i] -= d.D
	}
	return out
}

// WholeGPUs are the K lowest-index wholly free GPUs (nil if there are fewer).
func WholeGPUs(n Node, k int64) []int {
	var out []int
	for i, f := range n.Free {
		if int64(len(out)) == k {
			break
		}
		if f == MilliPerGPU {
			out = append(out, i)
		}
	}
	if int64(len(out)) < k {
		return nil
	}
	return out
}

// TightestGPU is the GPU with the least free milli that still takes d, lowest index on ties (-1: none).
func TightestGPU(n Node, d int64) int {
	best := -1
	for i, f := range n.Free {
		if f >= d && (best < 0 || f < n.Free[best]) {
			best = i
		}
	}
	return best
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// fgdScore is int(100·σ((F_before − F_after)/1000)): higher for a placement that adds less fragmentation.
func fgdScore(before float64, after Node, workload []TaskType) int64 {
	return int64(100 * sigmoid((before-Frag(after, workload))/1000))
}

// FGD scores a node by the fragmentation its placement adds and picks the GPU of a sharing pod that adds the
// least (the first index reaching the best score).
func FGD(n Node, d Demand, workload []TaskType) (int64, []int) {
	before := Frag(n, workload)
	if d.GPU() && d.K == 1 && d.D < MilliPerGPU {
		best, pick := int64(-1), -1
		for i, f := range n.Free {
			if f < d.D {
				continue
			}
			if s := fgdScore(before, After(n, d, []int{i}), workload); s > best {
				best, pick = s, i
			}
		}
		if pick < 0 {
			return 0, nil
		}
		return best, []int{pick}
	}
	var gpus []int
	if d.GPU() {
		if gpus = WholeGPUs(n, d.K); gpus == nil {
			return 0, nil
		}
	}
	return fgdScore(before, After(n, d, gpus), workload), gpus
}

// The normalisers of the simulator's scores: a node of 128 cores and 8 GPUs.
const (
	maxCPU = 128000.0
	maxGPU = 8000.0
)

// BestFitRaw is 100·(1 − (½·CPU left after/128 cores + ½·GPU left after/8 GPUs)), before min-max normalisation.
func BestFitRaw(n Node, d Demand) int64 {
	left := 0.5*float64(n.CPULeft-d.CPU)/maxCPU + 0.5*float64(n.Idle()-d.Total())/maxGPU
	return int64(100 * (1 - left))
}

// DotProduct is 100·(1 − a·b/2) for the node's left (CPU, GPU) and the pod's request, both normalised.
func DotProduct(n Node, d Demand) int64 {
	dot := float64(n.CPULeft)/maxCPU*float64(d.CPU)/maxCPU + float64(n.Idle())/maxGPU*float64(d.Total())/maxGPU
	return clamp(int64(100 * (1 - dot/2)))
}

// Tag is a GPU pod's class for GpuClustering: "share" or "<k>-gpu"; "" for a CPU-only pod.
func Tag(d Demand) string {
	switch {
	case !d.GPU():
		return ""
	case d.D < MilliPerGPU:
		return "share"
	default:
		return itoa(d.K) + "-gpu"
	}
}

// GpuClustering prefers nodes whose GPU pods are all of the pod's class, then nodes holding some of its class,
// then empty nodes; within a class the busier node. tags: the classes of the GPU pods on the node.
func GpuClustering(n Node, d Demand, tags map[string]int) int64 {
	tag := Tag(d)
	if tag == "" {
		return 0
	}
	base := int64(25 * (maxGPU - float64(n.Idle())) / maxGPU)
	switch {
	case tags[tag] > 0 && len(tags) == 1:
		return base + 75
	case tags[tag] > 0:
		return base + 50
	case len(tags) == 0:
		return base + 25
	default:
		return base
	}
}

// GpuPacking prefers partly used GPUs, then partly used nodes, then empty nodes with few GPUs.
func GpuPacking(n Node, d Demand) int64 {
	if !d.GPU() {
		return 0
	}
	full := int64(0)
	for _, f := range n.Free {
		if f == MilliPerGPU {
			full++
		}
	}
	if full == int64(len(n.Free)) {
		return max(33-full, full)
	}
	idx := make([]int, len(n.Free))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return n.Free[idx[a]] < n.Free[idx[b]] })
	var picked []int64
	for _, i := range idx {
		if int64(len(picked)) == d.K {
			break
		}
		if n.Free[i] >= d.D {
			picked = append(picked, n.Free[i])
		}
	}
	unused, sum := int64(0), int64(0)
	for _, f := range picked {
		if f == MilliPerGPU {
			unused++
		}
		sum += f * 100 / MilliPerGPU
	}
	if unused > 0 {
		return max(50-unused, 33)
	}
	return max(100-sum/10, 50)
}

// RandomGPU is a GPU chosen uniformly among those that take d (-1: none).
func RandomGPU(n Node, d int64, r *rand.Rand) int {
	pick, seen := -1, 0
	for i, f := range n.Free {
		if f >= d {
			seen++
			if r.Intn(seen) == 0 {
				pick = i
			}
		}
	}
	return pick
}

func clamp(s int64) int64 { return min(max(s, 0), 100) }

func itoa(k int64) string {
	if k < 10 {
		return string(rune('0' + k))
	}
	return itoa(k/10) + string(rune('0'+k%10))
}
