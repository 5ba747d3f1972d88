// Command raw is a guest written without the SDK, against the bare ABI; -ldflags=-X=main.mode=…
// picks how its filter fails: panic (not recovered: the Go runtime prints it and exits) or badptr
// (hands the host a buffer outside its memory).
package main

//go:wasmimport kwokbench pod_labels
func podLabels(buf, capacity uint32) uint32

var mode = "panic"

//go:wasmexport abi_version
func abiVersion() int32 { return 1 }

//go:wasmexport capabilities
func capabilities() int32 { return 2 } // filter

//go:wasmexport filter
func filter(cycle uint64) int32 {
	switch mode {
	case "panic":
		panic("raw guest panic")
	case "badptr":
		return int32(podLabels(0xffff0000, 4096))
	}
	return 0
}

func main() {}
