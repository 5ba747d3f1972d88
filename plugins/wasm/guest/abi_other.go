//go:build !wasip1

package guest

// Outside a wasip1 build there is no host: the package compiles (so guests can be vetted and
// unit-tested natively with a fake host) but fetching a field panics.
type noHost struct{}

var host hostABI = noHost{}

const outside = "guest: not running inside the kwokbench WASM host (build with GOOS=wasip1 GOARCH=wasm)"

func (noHost) fetch(field, []byte) uint32 { panic(outside) }
func (noHost) setReason(string)           { panic(outside) }
func (noHost) setScores([]int64)          { panic(outside) }
func (noHost) log(string)                 {}
