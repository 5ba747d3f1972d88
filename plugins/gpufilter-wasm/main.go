// Command gpufilter-wasm is plugins/gpufilter's rule as a WASM guest for plugins/wasm: pods labelled
// workload-type=GPU-intensive fit only nodes with allocatable nvidia.com/gpu, CPU-intensive ones need
// at least 2000m allocatable CPU, and Score keeps GPU nodes for GPU work. The same test table
// (plugins/gpufilter/testdata/cases.json) checks both; plugins/wasm runs it against this guest.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o gpufilter.wasm .
package main

import "kwokbench.local/plugins/wasm/guest"

const (
	workloadTypeLabel = "workload-type"
	gpuIntensive      = "GPU-intensive"
	cpuIntensive      = "CPU-intensive"
	minMilliCPU       = 2000
	maxNodeScore      = 100
)

func init() {
	guest.RegisterFilter(filter)
	guest.RegisterScore(score)
}

// main is never called: a reactor only runs init, then the host calls the exports.
func main() {}

func filter(p guest.Pod, n guest.Node) guest.Status {
	wt, _ := p.Labels().Get(workloadTypeLabel)
	switch wt {
	case gpuIntensive:
		if n.Allocatable().GPU <= 0 {
			return guest.UnschedulableAndUnresolvable("GPU-intensive pod needs a node with nvidia.com/gpu")
		}
	case cpuIntensive:
		if n.Allocatable().MilliCPU < minMilliCPU {
			return guest.UnschedulableAndUnresolvable("CPU-intensive pod needs a node with at least 2000m allocatable CPU")
		}
	}
	return guest.Success()
}

func score(p guest.Pod, n guest.Node) (int64, guest.Status) {
	wt, _ := p.Labels().Get(workloadTypeLabel)
	if (wt == gpuIntensive) == (n.Allocatable().GPU > 0) {
		return maxNodeScore, guest.Success()
	}
	return 0, guest.Success()
}
