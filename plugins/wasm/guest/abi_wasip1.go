//go:build wasip1

package guest

import "unsafe"

// Host functions (module "kwokbench"). A fetch writes the field's encoding into [buf, buf+capacity)
// when it fits and returns its length either way; 0xFFFFFFFF means the field does not exist in this call.

//go:wasmimport kwokbench pod_labels
func hostPodLabels(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport kwokbench pod_requests
func hostPodRequests(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport kwokbench pod_name
func hostPodName(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport kwokbench node_name
func hostNodeName(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport kwokbench node_labels
func hostNodeLabels(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport kwokbench node_allocatable
func hostNodeAllocatable(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport kwokbench node_taints
func hostNodeTaints(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport kwokbench node_scores
func hostNodeScores(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport kwokbench set_scores
func hostSetScores(scores unsafe.Pointer, n uint32)

//go:wasmimport kwokbench set_status_reason
func hostSetStatusReason(reason string)

//go:wasmimport kwokbench log
func hostLog(msg string)

type wasmHost struct{}

var host hostABI = wasmHost{}

func (wasmHost) fetch(f field, buf []byte) uint32 {
	p, n := unsafe.Pointer(unsafe.SliceData(buf)), uint32(len(buf))
	switch f {
	case fieldPodLabels:
		return hostPodLabels(p, n)
	case fieldPodRequests:
		return hostPodRequests(p, n)
	case fieldPodName:
		return hostPodName(p, n)
	case fieldNodeName:
		return hostNodeName(p, n)
	case fieldNodeLabels:
		return hostNodeLabels(p, n)
	case fieldNodeAllocatable:
		return hostNodeAllocatable(p, n)
	case fieldNodeTaints:
		return hostNodeTaints(p, n)
	case fieldNodeScores:
		return hostNodeScores(p, n)
	}
	panic("guest: unknown field")
}

func (wasmHost) setReason(reason string) { hostSetStatusReason(reason) }

func (wasmHost) setScores(scores []int64) {
	hostSetScores(unsafe.Pointer(unsafe.SliceData(scores)), uint32(len(scores)))
}

func (wasmHost) log(msg string) { hostLog(msg) }

// Exports the host calls; cycle identifies the scheduling cycle (never 0).

//go:wasmexport abi_version
func exportABIVersion() int32 { return ABIVersion }

//go:wasmexport capabilities
func exportCapabilities() int32 { return capabilities() }

//go:wasmexport prefilter
func exportPreFilter(cycle uint64) int32 { return dispatchPreFilter(cycle) }

//go:wasmexport filter
func exportFilter(cycle uint64) int32 { return dispatchFilter(cycle) }

//go:wasmexport score
func exportScore(cycle uint64) int64 { return dispatchScore(cycle) }

//go:wasmexport normalize_score
func exportNormalizeScore(cycle uint64) int32 { return dispatchNormalizeScore(cycle) }
