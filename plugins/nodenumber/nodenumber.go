// Package nodenumber is the reference WASM extension's NodeNumber example rule as a native kube-scheduler
// Score plugin: a node scores 10 when its name ends in the same digit as the pod's name, else 0 (every
// node 10 when the pod's name ends in no digit). The same rule runs as a WASM guest on kwokbench's host
// (plugins/nodenumber-wasm), on the reference's host (its prebuilt examples/nodenumber guest) and as the
// builtin extender's nodenumber rule; scenarios/wasm-upstream-vs-own.yaml compares the five ways.
//
//	kwokbench tools build-scheduler plugins/nodenumber
package nodenumber

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Name is the plugin name used in KubeSchedulerConfiguration profiles.
const Name = "NodeNumber"

// MatchScore is a matching node's score (the reference's).
const MatchScore = 10

// NodeNumber implements Score.
type NodeNumber struct{}

var _ fwk.ScorePlugin = NodeNumber{}

// New is the plugin's factory.
func New(_ context.Context, _ runtime.Object, _ fwk.Handle) (fwk.Plugin, error) { return NodeNumber{}, nil }

// Name returns the plugin name.
func (NodeNumber) Name() string { return Name }

// Score is MatchScore when the node's name ends in the pod's last digit.
func (NodeNumber) Score(_ context.Context, _ fwk.CycleState, p *v1.Pod, n fwk.NodeInfo) (int64, *fwk.Status) {
	return Rule(p.Name, n.Node().Name), nil
}

// ScoreExtensions: none (scores are already within the framework's range).
func (NodeNumber) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Rule is the rule alone, shared with the tests.
func Rule(pod, node string) int64 {
	pd, ok := lastDigit(pod)
	if !ok {
		return MatchScore
	}
	if nd, ok := lastDigit(node); ok && nd == pd {
		return MatchScore
	}
	return 0
}

func lastDigit(s string) (byte, bool) {
	if len(s) == 0 || s[len(s)-1] < '0' || s[len(s)-1] > '9' {
		return 0, false
	}
	return s[len(s)-1], true
}
