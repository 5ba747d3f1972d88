// Package guest is the SDK for kwokbench WASM scheduler plugins written in Go.
//
// A guest is a main package compiled by the standard Go toolchain (1.24 or newer, no TinyGo) into a
// WASI reactor, which the host plugin (kwokbench.local/plugins/wasm) loads at scheduler start:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// It registers its extension points in init — a reactor's main is never called:
//
//	func init() {
//		guest.RegisterFilter(func(p guest.Pod, n guest.Node) guest.Status {
//			if n.Allocatable().GPU == 0 {
//				return guest.UnschedulableAndUnresolvable("needs a GPU node")
//			}
//			return guest.Success()
//		})
//	}
//
//	func main() {}
//
// Accessors fetch fields from the host lazily, only when called: a pod field at most once per
// scheduling cycle, a node field at most once per call. What they return is immutable and stays valid
// after the call. A panic in a registered function is recovered and reported to the host as a guest
// fault with the panic's message (the scheduler then treats the node as unschedulable for the pod).
//
// The ABI the SDK implements is documented in the host plugin's README.
package guest

import (
	"iter"
	"unsafe"
)

// ABIVersion is the version of the host/guest ABI this SDK implements (the guest's abi_version export).
const ABIVersion = 1

// Code is a status code; the values are kube-scheduler's framework.Code values.
type Code int32

const (
	CodeSuccess                      Code = 0
	CodeError                        Code = 1
	CodeUnschedulable                Code = 2
	CodeUnschedulableAndUnresolvable Code = 3
	// CodeSkip is only meaningful from PreFilter: the plugin's Filter is skipped for this pod.
	CodeSkip Code = 5
	// CodeFault means the guest itself failed (the SDK returns it for a recovered panic); the host
	// handles it like a trap.
	CodeFault Code = 100
)

// Status is the outcome of an extension point; the zero value is success.
type Status struct {
	Code   Code
	Reason string
}

func Success() Status { return Status{} }

// Unschedulable rejects the node; preemption may make it fit.
func Unschedulable(reason string) Status { return Status{CodeUnschedulable, reason} }

// UnschedulableAndUnresolvable rejects the node whatever is preempted.
func UnschedulableAndUnresolvable(reason string) Status {
	return Status{CodeUnschedulableAndUnresolvable, reason}
}

// Error aborts the pod's scheduling cycle (the pod is retried with backoff).
func Error(reason string) Status { return Status{CodeError, reason} }

// Skip, from PreFilter, skips this plugin's Filter for the pod.
func Skip() Status { return Status{Code: CodeSkip} }

// Resources are quantities as the scheduler counts them.
type Resources struct {
	MilliCPU int64 // cpu in millicores
	Memory   int64 // memory in bytes
	GPU      int64 // nvidia.com/gpu (whole devices)
	Pods     int64 // pod slots (allocatable "pods"; 1 in a pod's requests)
}

// TaintEffect is a node taint's effect.
type TaintEffect uint8

const (
	NoSchedule TaintEffect = iota
	PreferNoSchedule
	NoExecute
	OtherEffect TaintEffect = 255
)

// Taint is a node taint.
type Taint struct {
	Key    string
	Value  string
	Effect TaintEffect
}

// NodeScore is one node's score, as NormalizeScore sees it.
type NodeScore struct {
	Name  string
	Score int64
}

// Pod is the pod being scheduled in the current call.
type Pod struct{ _ [0]func() }

// Labels are the pod's labels (fetched once per scheduling cycle).
func (Pod) Labels() Labels { return Labels{bytesOf(fieldPodLabels)} }

// Requests are the pod's effective requests (containers, init containers and overhead), once per cycle.
func (Pod) Requests() Resources { return resourcesOf(fieldPodRequests) }

// Name is the pod's name (fetched once per scheduling cycle).
func (Pod) Name() string {
	b := bytesOf(fieldPodName)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Node is the node of the current Filter or Score call.
type Node struct{ _ [0]func() }

// Name is the node's name.
func (Node) Name() string {
	b := bytesOf(fieldNodeName)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Labels are the node's labels.
func (Node) Labels() Labels { return Labels{bytesOf(fieldNodeLabels)} }

// Allocatable is the node's allocatable resources.
func (Node) Allocatable() Resources { return resourcesOf(fieldNodeAllocatable) }

// Taints are the node's taints.
func (Node) Taints() []Taint {
	if !taintsOK {
		taints, taintsOK = decodeTaints(bytesOf(fieldNodeTaints)), true
	}
	return taints
}

// Labels is a read-only label set, decoded on access without building a map.
type Labels struct{ raw []byte }

// Get returns the value of key; no allocation.
func (l Labels) Get(key string) (string, bool) {
	for b := l.raw; len(b) > 0; {
		var k, v string
		k, b = nextString(b)
		v, b = nextString(b)
		if k == key {
			return v, true
		}
	}
	return "", false
}

// Len is the number of labels.
func (l Labels) Len() int {
	n := 0
	for b := l.raw; len(b) > 0; n++ {
		_, b = nextString(b)
		_, b = nextString(b)
	}
	return n
}

// All iterates over the labels in the host's order.
func (l Labels) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		b := l.raw
		for len(b) > 0 {
			var k, v string
			k, b = nextString(b)
			v, b = nextString(b)
			if !yield(k, v) {
				return
			}
		}
	}
}

// Map copies the labels into a new map.
func (l Labels) Map() map[string]string {
	m := make(map[string]string)
	for k, v := range l.All() {
		m[k] = v
	}
	return m
}

var (
	preFilterFn func(Pod) Status
	filterFn    func(Pod, Node) Status
	scoreFn     func(Pod, Node) (int64, Status)
	normalizeFn func(Pod, []NodeScore) Status
)

// RegisterPreFilter sets the PreFilter function, called once per scheduling cycle before Filter.
func RegisterPreFilter(f func(Pod) Status) { preFilterFn = f }

// RegisterFilter sets the Filter function, called for every candidate node.
func RegisterFilter(f func(Pod, Node) Status) { filterFn = f }

// RegisterScore sets the Score function, called for every node that passed filtering.
func RegisterScore(f func(Pod, Node) (int64, Status)) { scoreFn = f }

// RegisterNormalizeScore sets the NormalizeScore function, which may rewrite the scores in place.
func RegisterNormalizeScore(f func(Pod, []NodeScore) Status) { normalizeFn = f }

// Log writes a message to the scheduler's log (verbosity 4).
func Log(msg string) { host.log(msg) }

// Capability bits of the capabilities export.
const (
	capPreFilter = 1 << iota
	capFilter
	capScore
	capNormalizeScore
)

func capabilities() int32 {
	var c int32
	if preFilterFn != nil {
		c |= capPreFilter
	}
	if filterFn != nil {
		c |= capFilter
	}
	if scoreFn != nil {
		c |= capScore
	}
	if normalizeFn != nil {
		c |= capNormalizeScore
	}
	return c
}

// field numbers the host functions the SDK fetches from; fields before firstNodeField belong to the
// pod and are cached for the cycle, the others for one call.
type field uint8

const (
	fieldPodLabels field = iota
	fieldPodRequests
	fieldPodName
	fieldNodeName
	fieldNodeLabels
	fieldNodeAllocatable
	fieldNodeTaints
	fieldNodeScores
	numFields
	firstNodeField = fieldNodeName
)

var fieldNames = [numFields]string{"pod labels", "pod requests", "pod name", "node name", "node labels",
	"node allocatable", "node taints", "node scores"}

// notAvailable is what a host function returns when the field does not exist in this call
// (a node field outside Filter and Score).
const notAvailable = ^uint32(0)

// resourcesSize is the size of the fixed Resources encoding: four little-endian int64.
const resourcesSize = 32

// hostABI is the host's side; abi_wasip1.go calls the real imports, tests install a fake.
type hostABI interface {
	fetch(f field, buf []byte) uint32
	setReason(reason string)
	setScores(scores []int64)
	log(msg string)
}

// slot caches one fetched field.
type slot struct {
	ok  bool
	raw []byte
	res Resources
}

var (
	cycle    uint64
	slots    [numFields]slot
	hints    [numFields]int
	fixedBuf [resourcesSize]byte
	taints   []Taint
	taintsOK bool
)

// begin starts a call: pod fields survive while the cycle id is unchanged, node fields never do.
func begin(c uint64) {
	if c != cycle || c == 0 {
		cycle = c
		for f := field(0); f < firstNodeField; f++ {
			slots[f] = slot{}
		}
	}
	for f := firstNodeField; f < numFields; f++ {
		slots[f] = slot{}
	}
	taints, taintsOK = nil, false
}

// bytesOf fetches a variable-length field into a buffer of its own (never reused, so strings may
// alias it), retrying once with the size the host asks for when the guess was too small.
func bytesOf(f field) []byte {
	s := &slots[f]
	if s.ok {
		return s.raw
	}
	n := hints[f]
	if n == 0 {
		n = 256
	}
	for {
		buf := make([]byte, n)
		got := host.fetch(f, buf)
		if got == notAvailable {
			panic("guest: " + fieldNames[f] + " not available in this call")
		}
		if int(got) <= n {
			s.raw, s.ok = buf[:got], true
			return s.raw
		}
		n = int(got)
		hints[f] = n
	}
}

func resourcesOf(f field) Resources {
	s := &slots[f]
	if !s.ok {
		got := host.fetch(f, fixedBuf[:])
		if got == notAvailable {
			panic("guest: " + fieldNames[f] + " not available in this call")
		}
		if got != resourcesSize {
			panic("guest: host sent a " + fieldNames[f] + " encoding of unexpected size")
		}
		s.res, s.ok = decodeResources(fixedBuf[:]), true
	}
	return s.res
}

func decodeResources(b []byte) Resources {
	return Resources{MilliCPU: int64(le64(b[0:])), Memory: int64(le64(b[8:])), GPU: int64(le64(b[16:])),
		Pods: int64(le64(b[24:]))}
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

const malformed = "guest: malformed encoding from the host"

func uvarint(b []byte) (uint64, []byte) {
	var x uint64
	for i, s := 0, uint(0); i < len(b) && s < 64; i, s = i+1, s+7 {
		c := b[i]
		if c < 0x80 {
			return x | uint64(c)<<s, b[i+1:]
		}
		x |= uint64(c&0x7f) << s
	}
	panic(malformed)
}

// nextString reads a uvarint length and that many bytes, as a string aliasing b.
func nextString(b []byte) (string, []byte) {
	n, rest := uvarint(b)
	if n > uint64(len(rest)) {
		panic(malformed)
	}
	return unsafe.String(unsafe.SliceData(rest), int(n)), rest[n:]
}

func decodeTaints(b []byte) []Taint {
	var out []Taint
	for len(b) > 0 {
		var t Taint
		t.Key, b = nextString(b)
		t.Value, b = nextString(b)
		if len(b) == 0 {
			panic(malformed)
		}
		t.Effect, b = TaintEffect(b[0]), b[1:]
		out = append(out, t)
	}
	return out
}

func decodeScores(b []byte) []NodeScore {
	var out []NodeScore
	for len(b) > 0 {
		var s NodeScore
		s.Name, b = nextString(b)
		if len(b) < 8 {
			panic(malformed)
		}
		s.Score, b = int64(le64(b)), b[8:]
		out = append(out, s)
	}
	return out
}

// panicReason turns a recovered value into a message without fmt (which would double the guest's size).
func panicReason(r any) string {
	switch v := r.(type) {
	case string:
		return "guest panic: " + v
	case error:
		return "guest panic: " + v.Error()
	case interface{ String() string }:
		return "guest panic: " + v.String()
	default:
		return "guest panic (value of a non-string type)"
	}
}

func finish(st Status) int32 {
	if st.Reason != "" {
		host.setReason(st.Reason)
	}
	return int32(st.Code)
}

func notRegistered(point string) Status {
	return Status{CodeFault, "guest: no " + point + " function registered"}
}

func callPreFilter() (st Status) {
	defer func() {
		if r := recover(); r != nil {
			st = Status{CodeFault, panicReason(r)}
		}
	}()
	if preFilterFn == nil {
		return notRegistered("PreFilter")
	}
	return preFilterFn(Pod{})
}

func callFilter() (st Status) {
	defer func() {
		if r := recover(); r != nil {
			st = Status{CodeFault, panicReason(r)}
		}
	}()
	if filterFn == nil {
		return notRegistered("Filter")
	}
	return filterFn(Pod{}, Node{})
}

func callScore() (score int64, st Status) {
	defer func() {
		if r := recover(); r != nil {
			score, st = 0, Status{CodeFault, panicReason(r)}
		}
	}()
	if scoreFn == nil {
		return 0, notRegistered("Score")
	}
	return scoreFn(Pod{}, Node{})
}

func callNormalizeScore() (st Status) {
	defer func() {
		if r := recover(); r != nil {
			st = Status{CodeFault, panicReason(r)}
		}
	}()
	if normalizeFn == nil {
		return notRegistered("NormalizeScore")
	}
	scores := decodeScores(bytesOf(fieldNodeScores))
	if st = normalizeFn(Pod{}, scores); st.Code == CodeSuccess {
		out := make([]int64, len(scores))
		for i := range scores {
			out[i] = scores[i].Score
		}
		host.setScores(out)
	}
	return st
}

// The dispatchers are what the exports run; cycle is the host's scheduling-cycle id.

func dispatchPreFilter(c uint64) int32 {
	begin(c)
	return finish(callPreFilter())
}

func dispatchFilter(c uint64) int32 {
	begin(c)
	return finish(callFilter())
}

// dispatchScore returns the score, or minus the status code when the status is not success.
func dispatchScore(c uint64) int64 {
	begin(c)
	score, st := callScore()
	if st.Code == CodeSuccess && score < 0 {
		st = Status{CodeFault, "guest: negative score"}
	}
	if st.Code != CodeSuccess {
		return -int64(finish(st))
	}
	return score
}

func dispatchNormalizeScore(c uint64) int32 {
	begin(c)
	return finish(callNormalizeScore())
}
