// Command nodenumber-wasm is the reference WASM extension's NodeNumber example
// (kube-scheduler-wasm-extension/examples/nodenumber, itself a port of kube-scheduler-simulator's sample)
// on kwokbench's guest SDK: a node scores 10 when its name ends in the same digit as the pod's name, else 0.
// The reference's guest also logs every call and records an Event on every PreScore; this port does the
// rule alone, like plugins/nodenumber (native) and the builtin extender's nodenumber rule.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o nodenumber.wasm .
package main

import "kwokbench.local/plugins/wasm/guest"

const matchScore = 10

func init() {
	guest.RegisterScore(score)
}

// main is never called: a reactor only runs init, then the host calls the exports.
func main() {}

func score(p guest.Pod, n guest.Node) (int64, guest.Status) {
	pod, ok := lastDigit(p.Name())
	if !ok {
		return matchScore, guest.Success() // the reference scores every node alike when the pod has no digit
	}
	if node, ok := lastDigit(n.Name()); ok && node == pod {
		return matchScore, guest.Success()
	}
	return 0, guest.Success()
}

func lastDigit(s string) (byte, bool) {
	if len(s) == 0 || s[len(s)-1] < '0' || s[len(s)-1] > '9' {
		return 0, false
	}
	return s[len(s)-1], true
}
