package wasm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// instance is one instantiated guest. It serves one call at a time (the pool hands it to one
// goroutine); host functions find it through the call's context.
type instance struct {
	mod    api.Module
	mem    api.Memory
	fns    [numExports]api.Function
	stack  [1]uint64
	ctx    callContext
	timer  *time.Timer
	stderr stderrBuffer

	// the call in progress, read by the host functions
	point      export
	cd         *cycleData
	node       *v1.Node
	scores     fwk.NodeScoreList
	reason     string
	lastReason string
	scratch    []byte
	fetches    [numFields]uint64
}

// callContext is the context of every call into an instance. Its Done channel is closed by the
// instance's deadline timer, which makes wazero stop the guest (WithCloseOnContextDone); it is never
// reopened, because an instance whose deadline fired is discarded. One per instance, so a call
// allocates no context or timer.
type callContext struct {
	inst    *instance
	done    chan struct{}
	expired atomic.Bool
}

type instanceKey struct{}

func (c *callContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *callContext) Done() <-chan struct{}       { return c.done }
func (c *callContext) Value(key any) any {
	if key == (instanceKey{}) {
		return c.inst
	}
	return nil
}

func (c *callContext) Err() error {
	if c.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

func (in *instance) expire() {
	in.ctx.expired.Store(true)
	close(in.ctx.done)
}

// instanceOf finds the instance a host function serves.
func instanceOf(ctx context.Context) *instance {
	if c, ok := ctx.(*callContext); ok {
		return c.inst
	}
	if in, ok := ctx.Value(instanceKey{}).(*instance); ok {
		return in
	}
	panic(errors.New("kwokbench host function called outside a guest call"))
}

// initTimeout bounds a new instance's _initialize (the guest's runtime and package init).
const initTimeout = 10 * time.Second

func newInstance(g *guestModule) (*instance, error) {
	in := &instance{}
	in.ctx.inst, in.ctx.done = in, make(chan struct{})
	in.timer = time.AfterFunc(initTimeout, in.expire)
	mod, err := g.rt.InstantiateModule(&in.ctx, g.compiled, g.config.WithStderr(&in.stderr))
	fired := !in.timer.Stop()
	if err != nil {
		return nil, fmt.Errorf("instantiating the guest: %s", in.describe(err, initTimeout))
	}
	if fired {
		_ = mod.Close(context.Background())
		return nil, fmt.Errorf("instantiating the guest: exceeded %v", initTimeout)
	}
	in.mod, in.mem = mod, mod.Memory()
	for e, spec := range exportSpecs {
		if g.exported[e] {
			in.fns[e] = mod.ExportedFunction(spec.name)
		}
	}
	return in, nil
}

func (in *instance) close() {
	in.timer.Stop()
	if in.mod != nil {
		_ = in.mod.Close(context.Background())
	}
}

// call runs one export with its deadline. A non-nil error means the instance is broken (trap, exit,
// deadline, host-function panic) and must be discarded; so must an instance whose deadline fired
// even though the call returned (fired reports it).
func (in *instance) call(e export, arg uint64, timeout time.Duration) (result uint64, fired bool, err error) {
	in.point, in.reason = e, ""
	in.stderr.reset()
	in.stack[0] = arg
	if timeout <= 0 { // a trusted guest: no deadline
		err = in.fns[e].CallWithStack(&in.ctx, in.stack[:])
		in.cd, in.node, in.scores = nil, nil, nil
		return in.stack[0], false, err
	}
	in.timer.Reset(timeout)
	err = in.fns[e].CallWithStack(&in.ctx, in.stack[:])
	fired = !in.timer.Stop()
	in.cd, in.node, in.scores = nil, nil, nil
	return in.stack[0], fired, err
}

// describe says why a call failed, with what the guest wrote to stderr (a Go guest's panic or fatal error).
func (in *instance) describe(err error, timeout time.Duration) string {
	var msg string
	var exit *sys.ExitError
	switch {
	case in.ctx.expired.Load():
		msg = fmt.Sprintf("exceeded its call timeout of %v", timeout)
	case errors.As(err, &exit):
		msg = fmt.Sprintf("exited with code %d", exit.ExitCode())
	default:
		first, _, _ := strings.Cut(err.Error(), "\n")
		if _, inner, ok := strings.Cut(first, "] failed: "); ok && strings.HasPrefix(first, "module[") {
			first = inner // wazero's "module[] function[_initialize] failed: " adds nothing
		}
		msg = "trapped: " + strings.TrimSuffix(first, " (recovered by wazero)")
	}
	if s := in.stderr.summary(); s != "" {
		msg += " (" + s + ")"
	}
	return msg
}

// stderrBuffer keeps the start of what the guest writes to stderr during one call.
type stderrBuffer struct{ b []byte }

const stderrKeep = 2048

func (s *stderrBuffer) Write(p []byte) (int, error) {
	if room := stderrKeep - len(s.b); room > 0 {
		s.b = append(s.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (s *stderrBuffer) reset() { s.b = s.b[:0] }

// summary is the first paragraph (a Go panic's message, not its goroutine dump), on one line.
func (s *stderrBuffer) summary() string {
	text := strings.TrimSpace(string(s.b))
	text, _, _ = strings.Cut(text, "\n\n")
	text = strings.Join(strings.Fields(strings.ReplaceAll(text, "\n", " | ")), " ")
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	return text
}

// pool hands out instances, creating them on demand up to its size. The scheduler calls Filter from
// up to 16 goroutines; each takes its own instance, so calls never share guest memory.
type pool struct {
	idle  chan *instance
	slots chan struct{}
	g     *guestModule

	mu        sync.Mutex
	live      map[*instance]struct{}
	created   int
	discarded int
	gone      [numFields]uint64 // fetches made by discarded instances
}

func newPool(g *guestModule, size int) *pool {
	return &pool{idle: make(chan *instance, size), slots: make(chan struct{}, size), g: g,
		live: map[*instance]struct{}{}}
}

// get prefers an idle instance, then a new one; it waits only when poolSize instances are busy.
func (p *pool) get(ctx context.Context) (*instance, error) {
	select {
	case in := <-p.idle:
		return in, nil
	default:
	}
	select {
	case p.slots <- struct{}{}:
		return p.create()
	default:
	}
	select {
	case in := <-p.idle:
		return in, nil
	case p.slots <- struct{}{}:
		return p.create()
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a free guest instance: %w", context.Cause(ctx))
	}
}

// create makes an instance for the slot just taken (and gives the slot back if it cannot).
func (p *pool) create() (*instance, error) {
	in, err := newInstance(p.g)
	if err != nil {
		<-p.slots
		return nil, err
	}
	p.mu.Lock()
	p.live[in] = struct{}{}
	p.created++
	p.mu.Unlock()
	return in, nil
}

func (p *pool) put(in *instance) { p.idle <- in }

// discard drops a broken instance; a fresh one is made when next needed.
func (p *pool) discard(in *instance) {
	in.close()
	p.mu.Lock()
	delete(p.live, in)
	p.discarded++
	for i, n := range in.fetches {
		p.gone[i] += n
	}
	p.mu.Unlock()
	<-p.slots
}

// poolStats is for tests and benchmarks; only meaningful while no call is running.
type poolStats struct {
	created, discarded int
	fetches            [numFields]uint64
}

func (p *pool) stats() poolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := poolStats{created: p.created, discarded: p.discarded, fetches: p.gone}
	for in := range p.live {
		for i, n := range in.fetches {
			s.fetches[i] += n
		}
	}
	return s
}

// Host functions (module "kwokbench"); see README.md for the ABI.

// field numbers the fetch host functions, in the guest SDK's order.
type field int

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
)

// notAvailable is a fetch's answer when the field does not exist in this call.
const notAvailable = ^uint32(0)

// maxReason caps a status reason copied from the guest.
const maxReason = 1024

var fetchParams, fetchResults = []api.ValueType{i32, i32}, []api.ValueType{i32}

type hostFunction struct {
	fn              api.GoModuleFunc
	params, results []api.ValueType
}

var hostFunctionSpecs = map[string]hostFunction{
	"pod_labels":        {fetch(fieldPodLabels), fetchParams, fetchResults},
	"pod_requests":      {fetch(fieldPodRequests), fetchParams, fetchResults},
	"pod_name":          {fetch(fieldPodName), fetchParams, fetchResults},
	"node_name":         {fetch(fieldNodeName), fetchParams, fetchResults},
	"node_labels":       {fetch(fieldNodeLabels), fetchParams, fetchResults},
	"node_allocatable":  {fetch(fieldNodeAllocatable), fetchParams, fetchResults},
	"node_taints":       {fetch(fieldNodeTaints), fetchParams, fetchResults},
	"node_scores":       {fetch(fieldNodeScores), fetchParams, fetchResults},
	"set_scores":        {setScores, []api.ValueType{i32, i32}, nil},
	"set_status_reason": {setStatusReason, []api.ValueType{i32, i32}, nil},
	"log":               {guestLog, []api.ValueType{i32, i32}, nil},
}

func instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(hostModule)
	for name, h := range hostFunctionSpecs {
		b.NewFunctionBuilder().WithGoModuleFunction(h.fn, h.params, h.results).Export(name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// fetch makes the host function of one field: (buf, capacity) -> length. The encoding is written
// only when it fits; the guest retries with a bigger buffer otherwise.
func fetch(f field) api.GoModuleFunc {
	return func(ctx context.Context, _ api.Module, stack []uint64) {
		in := instanceOf(ctx)
		in.fetches[f]++
		b, ok := in.encode(f)
		if !ok {
			stack[0] = uint64(notAvailable)
			return
		}
		buf, capacity := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
		if uint64(buf)+uint64(capacity) > uint64(in.mem.Size()) {
			panic(fmt.Errorf("the guest passed a buffer [%d, %d) outside its memory", buf, uint64(buf)+uint64(capacity)))
		}
		if len(b) > 0 && uint32(len(b)) <= capacity {
			in.mem.Write(buf, b)
		}
		stack[0] = uint64(uint32(len(b)))
	}
}

// encode returns the field's encoding: the pod's from the cycle's cache, a node's freshly into the
// instance's scratch buffer (the guest caches node fields for the call).
func (in *instance) encode(f field) ([]byte, bool) {
	if f < fieldNodeName {
		if in.cd == nil {
			return nil, false
		}
		switch f {
		case fieldPodLabels:
			return in.cd.podLabels(), true
		case fieldPodName:
			return append(in.scratch[:0], in.cd.pod.Name...), true
		}
		return in.cd.podRequests(), true
	}
	if f == fieldNodeScores {
		if in.point != expNormalizeScore {
			return nil, false
		}
		in.scratch = appendScores(in.scratch[:0], in.scores)
		return in.scratch, true
	}
	if in.node == nil {
		return nil, false
	}
	switch f {
	case fieldNodeName:
		return append(in.scratch[:0], in.node.Name...), true
	case fieldNodeLabels:
		in.scratch = appendLabels(in.scratch[:0], in.node.Labels)
	case fieldNodeAllocatable:
		in.scratch = appendResources(in.scratch[:0], in.node.Status.Allocatable, 0)
	case fieldNodeTaints:
		in.scratch = appendTaints(in.scratch[:0], in.node.Spec.Taints)
	}
	return in.scratch, true
}

func (in *instance) read(ptr, n uint32) []byte {
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("the guest passed a buffer [%d, %d) outside its memory", ptr, uint64(ptr)+uint64(n)))
	}
	return b
}

// setScores (ptr, n): n little-endian int64, one per node of the NormalizeScore call, in its order.
func setScores(ctx context.Context, _ api.Module, stack []uint64) {
	in := instanceOf(ctx)
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	if in.point != expNormalizeScore || int(n) != len(in.scores) {
		panic(fmt.Errorf("set_scores with %d scores outside NormalizeScore or for %d nodes", n, len(in.scores)))
	}
	b := in.read(ptr, n*8)
	for i := range in.scores {
		in.scores[i].Score = int64(binary.LittleEndian.Uint64(b[i*8:]))
	}
}

// setStatusReason (ptr, len): the reason of the status the current call returns (UTF-8, first 1 KiB kept).
func setStatusReason(ctx context.Context, _ api.Module, stack []uint64) {
	in := instanceOf(ctx)
	b := in.read(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	b = b[:min(len(b), maxReason)]
	if string(b) != in.lastReason { // guests repeat a few reasons: copy each once
		in.lastReason = string(b)
	}
	in.reason = in.lastReason
}

func guestLog(ctx context.Context, _ api.Module, stack []uint64) {
	in := instanceOf(ctx)
	b := in.read(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	klog.V(4).InfoS("wasm guest", "plugin", Name, "message", string(b[:min(len(b), maxReason)]))
}
