// Command bench is a guest whose work is chosen at link time (-ldflags=-X=main.mode=…), so the host's
// benchmarks can subtract one cost from the next:
//
//	empty  returns at once: the boundary crossing alone
//	fetch  reads what gpufilter reads (pod labels, node allocatable) and returns: + field fetches
//	alloc  reads every field and copies labels into maps: a guest that allocates (GC pressure)
//	all    reads every field twice and has every extension point (the host's cache tests)
package main

import (
	"runtime"

	"kwokbench.local/plugins/wasm/guest"
)

var mode = "empty"

func init() {
	switch mode {
	case "empty":
		guest.RegisterFilter(func(guest.Pod, guest.Node) guest.Status { return guest.Success() })
		guest.RegisterScore(func(guest.Pod, guest.Node) (int64, guest.Status) { return 0, guest.Success() })
	case "fetch":
		guest.RegisterFilter(func(p guest.Pod, n guest.Node) guest.Status {
			_, _ = p.Labels(), n.Allocatable()
			return guest.Success()
		})
		guest.RegisterScore(func(p guest.Pod, n guest.Node) (int64, guest.Status) {
			_, _ = p.Labels(), n.Allocatable()
			return 0, guest.Success()
		})
	case "alloc":
		guest.RegisterFilter(func(p guest.Pod, n guest.Node) guest.Status {
			return status(len(p.Labels().Map()) + len(n.Labels().Map()) + len(n.Taints()) + len(n.Name()))
		})
		guest.RegisterScore(func(p guest.Pod, n guest.Node) (int64, guest.Status) {
			return 0, status(len(p.Labels().Map()) + len(n.Labels().Map()) + len(n.Taints()) + len(n.Name()))
		})
	case "all":
		guest.RegisterPreFilter(func(p guest.Pod) guest.Status {
			readPod(p)
			return guest.Success()
		})
		guest.RegisterFilter(func(p guest.Pod, n guest.Node) guest.Status {
			readPod(p)
			readNode(n)
			return guest.Success()
		})
		guest.RegisterScore(func(p guest.Pod, n guest.Node) (int64, guest.Status) {
			readPod(p)
			return readNode(n), guest.Success()
		})
		guest.RegisterNormalizeScore(func(p guest.Pod, scores []guest.NodeScore) guest.Status {
			for i := range scores {
				scores[i].Score = 100 - scores[i].Score
			}
			return guest.Success()
		})
	default:
		panic("bench guest: unknown mode " + mode)
	}
}

func status(n int) guest.Status {
	if n < 0 {
		return guest.Error("impossible")
	}
	return guest.Success()
}

func readPod(p guest.Pod) {
	for range 2 {
		_, _ = p.Labels(), p.Requests()
	}
}

// readNode reads every node field twice; the score is the node's allocatable CPU in cores.
func readNode(n guest.Node) int64 {
	var s int64
	for range 2 {
		_, _, _ = n.Name(), n.Labels(), n.Taints()
		s = n.Allocatable().MilliCPU / 1000
	}
	return min(s, 100)
}

// run_gc runs a full collection, so the benchmarks can time one.
//
//go:wasmexport run_gc
func runGC() { runtime.GC() }

func main() {}
