// Package wasm is a kube-scheduler framework plugin that runs a WebAssembly guest at PreFilter,
// Filter and Score (and NormalizeScore when the guest has it), hosted by wazero (pure Go, no cgo).
//
// The scheduler is built once with this plugin:
//
//	kwokbench tools build-scheduler plugins/wasm
//
// and the guest is named in the plugin's args (guestURL), read when the scheduler starts: changing
// the guest needs no scheduler rebuild. Guests are written against kwokbench.local/plugins/wasm/guest
// and compiled by the standard Go toolchain; README.md documents the ABI for any other language.
//
// The module is compiled once; instances come from a pool (one per concurrent call). Objects reach
// the guest lazily: it calls host functions for just the fields it reads, the pod's encoded once per
// scheduling cycle (cached in CycleState) and a node's within the call. A guest that traps, panics,
// exits, runs out of memory or overruns the call deadline costs the pod that node (Filter:
// UnschedulableAndUnresolvable with the reason) or the cycle (Score: Error), never the scheduler;
// its instance is discarded, not reused.
package wasm

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Name is the plugin name used in KubeSchedulerConfiguration profiles.
const Name = "Wasm"

// Status codes on the wire are framework.Code values, plus codeFault: the guest reports its own
// failure (the Go SDK does for a recovered panic), handled like a trap.
const codeFault = 100

// Plugin hosts one guest module.
type Plugin struct {
	guest   *guestModule
	pool    *pool
	caps    uint32
	timeout time.Duration
	source  string
}

var (
	_ fwk.PreFilterPlugin = (*Plugin)(nil)
	_ fwk.FilterPlugin    = (*Plugin)(nil)
	_ fwk.PreScorePlugin  = (*Plugin)(nil)
	_ fwk.ScorePlugin     = (*Plugin)(nil)
	_ fwk.ScoreExtensions = (*Plugin)(nil)
)

// New is the plugin factory: it loads, compiles and validates the guest and instantiates it once, so
// a guest that cannot work fails the scheduler's start with one error naming the cause.
func New(ctx context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	a, err := decodeArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s plugin: %w", Name, err)
	}
	p, err := newPlugin(ctx, a)
	if err != nil {
		return nil, fmt.Errorf("%s plugin, guest %s: %w", Name, a.GuestURL, err)
	}
	return p, nil
}

func newPlugin(ctx context.Context, a Args) (*Plugin, error) {
	start := time.Now()
	wasm, err := loadGuest(ctx, a.GuestURL)
	if err != nil {
		return nil, err
	}
	g, err := compileGuest(ctx, wasm, a)
	if err != nil {
		return nil, err
	}
	p := &Plugin{guest: g, pool: newPool(g, a.PoolSize), timeout: a.CallTimeout.Duration, source: a.GuestURL}
	if a.Trusted {
		p.timeout = 0 // no deadline timer either: nothing could stop the guest
	}
	if err := p.handshake(ctx); err != nil {
		_ = g.rt.Close(context.Background())
		return nil, err
	}
	klog.FromContext(ctx).Info("WASM guest loaded", "plugin", Name, "guest", a.GuestURL, "bytes", g.size,
		"capabilities", p.caps, "poolSize", a.PoolSize, "callTimeout", p.timeout, "elapsed", time.Since(start))
	return p, nil
}

// handshake instantiates the first instance and asks it for the ABI version and capabilities.
func (p *Plugin) handshake(ctx context.Context) error {
	in, err := p.pool.get(ctx)
	if err != nil {
		return err
	}
	ask := func(e export) (uint32, error) {
		v, fired, err := in.call(e, 0, p.timeout)
		if err != nil || fired {
			p.pool.discard(in)
			if err == nil {
				return 0, fmt.Errorf("%s: exceeded %v", exportSpecs[e].name, p.timeout)
			}
			return 0, fmt.Errorf("%s: %s", exportSpecs[e].name, in.describe(err, p.timeout))
		}
		return uint32(v), nil
	}
	v, err := ask(expABIVersion)
	if err != nil {
		return err
	}
	if v != ABIVersion {
		p.pool.discard(in)
		return fmt.Errorf("the guest speaks ABI v%d; this host speaks v%d", v, ABIVersion)
	}
	caps, err := ask(expCapabilities)
	if err != nil {
		return err
	}
	if err := p.guest.checkCapabilities(caps); err != nil {
		p.pool.discard(in)
		return err
	}
	p.caps = caps
	p.pool.put(in)
	return nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// Close releases the runtime and every instance (the framework calls it on shutdown).
func (p *Plugin) Close() error { return p.guest.rt.Close(context.Background()) }

// cycleData is the pod's side of a scheduling cycle: an id the guest keys its pod cache on, and the
// pod's encoded fields, each computed at most once, on the first fetch by any instance.
type cycleData struct {
	id           uint64
	pod          *v1.Pod
	labelsOnce   sync.Once
	labels       []byte
	requestsOnce sync.Once
	requests     []byte
}

// Clone shares the data: it depends only on the pod, which preemption's cloned states do not change.
func (c *cycleData) Clone() fwk.StateData { return c }

func (c *cycleData) podLabels() []byte {
	c.labelsOnce.Do(func() { c.labels = appendLabels(nil, c.pod.Labels) })
	return c.labels
}

func (c *cycleData) podRequests() []byte {
	c.requestsOnce.Do(func() { c.requests = podRequests(c.pod) })
	return c.requests
}

var cycles atomic.Uint64

const stateKey fwk.StateKey = "kwokbench.local/plugins/wasm"

func newCycle(state fwk.CycleState, pod *v1.Pod) *cycleData {
	cd := &cycleData{id: cycles.Add(1), pod: pod}
	if state != nil {
		state.Write(stateKey, cd)
	}
	return cd
}

// cycle finds the cycle's data, or starts it when PreFilter/PreScore did not run (e.g. a profile
// enabling only this plugin's Filter). Concurrent first calls may each start one: that costs a
// second encoding of the pod's fields, never a wrong answer.
func cycle(state fwk.CycleState, pod *v1.Pod) *cycleData {
	if state != nil {
		if d, err := state.Read(stateKey); err == nil {
			if cd, ok := d.(*cycleData); ok && cd.pod == pod {
				return cd
			}
		}
	}
	return newCycle(state, pod)
}

// invoke runs one guest export for the cycle: the raw result and the reason the guest set, or a
// fault (the instance is then discarded).
func (p *Plugin) invoke(ctx context.Context, e export, cd *cycleData, node *v1.Node,
	scores fwk.NodeScoreList) (uint64, string, *fwk.Status) {
	in, err := p.pool.get(ctx)
	if err != nil {
		return 0, "", fault(e, err.Error())
	}
	in.cd, in.node, in.scores = cd, node, scores
	v, fired, err := in.call(e, cd.id, p.timeout)
	reason := in.reason
	if err == nil && !fired {
		p.pool.put(in)
		return v, reason, nil
	}
	p.pool.discard(in)
	if err == nil { // it returned as its deadline struck: the answer stands, the instance does not
		return v, reason, nil
	}
	return 0, "", fault(e, in.describe(err, p.timeout))
}

// fault is the status of a guest that failed: an unschedulable node at PreFilter/Filter, so the pod
// is reported with the reason instead of retried in a loop, and an error at Score/NormalizeScore.
func fault(e export, msg string) *fwk.Status {
	msg = "WASM guest " + exportSpecs[e].name + " " + msg
	if e == expPreFilter || e == expFilter {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
	}
	return fwk.NewStatus(fwk.Error, msg)
}

// status translates the status code a guest returned from export e.
func status(code int32, reason string, e export) *fwk.Status {
	rejects := e == expPreFilter || e == expFilter
	switch c := fwk.Code(code); {
	case code == 0:
		return nil
	case rejects && (c == fwk.Unschedulable || c == fwk.UnschedulableAndUnresolvable):
		if reason == "" {
			reason = "rejected by the WASM guest"
		}
		return fwk.NewStatus(c, reason)
	case e == expPreFilter && c == fwk.Skip:
		return fwk.NewStatus(fwk.Skip)
	case c == fwk.Error:
		if reason == "" {
			reason = "the WASM guest returned Error"
		}
		return fwk.NewStatus(fwk.Error, reason)
	case code == codeFault:
		return fault(e, "failed: "+reason)
	default:
		return fault(e, fmt.Sprintf("returned status code %d, not valid here (reason %q)", code, reason))
	}
}

// PreFilter starts the cycle and runs the guest's prefilter; without prefilter and filter in the
// guest, it skips the plugin's Filter.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod,
	_ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if p.caps&(capPreFilter|capFilter) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cd := newCycle(state, pod)
	if p.caps&capPreFilter == 0 {
		return nil, nil
	}
	v, reason, st := p.invoke(ctx, expPreFilter, cd, nil, nil)
	if st != nil {
		return nil, st
	}
	return nil, status(int32(uint32(v)), reason, expPreFilter)
}

// PreFilterExtensions is nil: the guest keeps no per-node state to update.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter asks the guest whether the pod fits the node.
func (p *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if p.caps&capFilter == 0 {
		return nil
	}
	node := ni.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	v, reason, st := p.invoke(ctx, expFilter, cycle(state, pod), node, nil)
	if st != nil {
		return st
	}
	return status(int32(uint32(v)), reason, expFilter)
}

// PreScore skips Score when the guest has none.
func (p *Plugin) PreScore(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if p.caps&capScore == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	cycle(state, pod)
	return nil
}

// Score asks the guest for the node's score: the export returns it, or minus a status code.
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	if p.caps&capScore == 0 {
		return 0, nil
	}
	node := ni.Node()
	if node == nil {
		return 0, fwk.NewStatus(fwk.Error, "node not found")
	}
	v, reason, st := p.invoke(ctx, expScore, cycle(state, pod), node, nil)
	if st != nil {
		return 0, st
	}
	if s := int64(v); s >= 0 {
		return s, nil
	} else if s >= -1<<31 {
		return 0, status(int32(-s), reason, expScore)
	}
	return 0, fault(expScore, fmt.Sprintf("returned %d", int64(v)))
}

// ScoreExtensions is the plugin itself when the guest normalizes scores, nil otherwise.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions {
	if p.caps&capNormalizeScore != 0 {
		return p
	}
	return nil
}

// NormalizeScore hands the guest every node's score; it writes them back with set_scores.
func (p *Plugin) NormalizeScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod,
	scores fwk.NodeScoreList) *fwk.Status {
	v, reason, st := p.invoke(ctx, expNormalizeScore, cycle(state, pod), nil, scores)
	if st != nil {
		return st
	}
	return status(int32(uint32(v)), reason, expNormalizeScore)
}
