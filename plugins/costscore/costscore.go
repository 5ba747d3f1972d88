// Package costscore is a Score plugin of a known cost: each Score call spins for costNanos (its pluginConfig
// args, JSON {"costNanos": N}) and scores every node 0, so it changes no placement, only the scheduler's CPU
// per pod. benchmarks/bench_verdicts.py calibrates costNanos against the stock scheduler's CPU per pod on the
// same host to inject a slowdown of a chosen size (2, 5, 10, 20%) and checks what the verdicts find.
//
//	kwokbench tools build-scheduler plugins/costscore
package costscore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Name is the plugin name used in KubeSchedulerConfiguration profiles.
const Name = "CostScore"

// Args are the plugin's pluginConfig args.
type Args struct {
	// CostNanos is how long each Score call spins (0: none).
	CostNanos int64 `json:"costNanos"`
}

// CostScore implements Score.
type CostScore struct{ cost time.Duration }

var _ fwk.ScorePlugin = CostScore{}

// ParseArgs reads the args (JSON, as kube-scheduler hands an out-of-tree plugin's args over).
func ParseArgs(raw []byte) (Args, error) {
	var a Args
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a); err != nil {
			return a, fmt.Errorf("%s args: %w", Name, err)
		}
	}
	if a.CostNanos < 0 || a.CostNanos > int64(time.Second) {
		return a, fmt.Errorf("%s args: costNanos %d is not within 0..1e9", Name, a.CostNanos)
	}
	return a, nil
}

// New is the plugin's factory.
func New(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	var raw []byte
	if u, ok := obj.(*runtime.Unknown); ok && u != nil {
		raw = u.Raw
	}
	a, err := ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	return CostScore{cost: time.Duration(a.CostNanos)}, nil
}

// Name returns the plugin name.
func (CostScore) Name() string { return Name }

// Score spins for the plugin's cost, then scores 0.
func (c CostScore) Score(_ context.Context, _ fwk.CycleState, _ *v1.Pod, _ fwk.NodeInfo) (int64, *fwk.Status) {
	if c.cost > 0 {
		deadline := time.Now().Add(c.cost)
		for time.Now().Before(deadline) {
		}
	}
	return 0, nil
}

// ScoreExtensions: none.
func (CostScore) ScoreExtensions() fwk.ScoreExtensions { return nil }
