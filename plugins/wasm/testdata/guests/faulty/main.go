// Command faulty misbehaves on request, for the host's fault tests. The pod's labels choose:
// fault-at (prefilter, filter or score), fault (panic, exit, loop, sleep, oom) and, optionally,
// fault-node (only on that node). Built with -ldflags=-X=main.initFault=panic it panics in init.
package main

import (
	"os"
	"time"

	"kwokbench.local/plugins/wasm/guest"
)

var initFault = ""

var hog [][]byte

func init() {
	if initFault == "panic" {
		panic("faulty guest: init failed")
	}
	guest.RegisterPreFilter(func(p guest.Pod) guest.Status {
		act(p, "prefilter", "")
		return guest.Success()
	})
	guest.RegisterFilter(func(p guest.Pod, n guest.Node) guest.Status {
		act(p, "filter", n.Name())
		return guest.Success()
	})
	guest.RegisterScore(func(p guest.Pod, n guest.Node) (int64, guest.Status) {
		act(p, "score", n.Name())
		return 50, guest.Success()
	})
}

func act(p guest.Pod, at, node string) {
	l := p.Labels()
	if v, _ := l.Get("fault-at"); v != at {
		return
	}
	if v, ok := l.Get("fault-node"); ok && v != node {
		return
	}
	switch kind, _ := l.Get("fault"); kind {
	case "panic":
		panic("boom")
	case "exit":
		os.Exit(3)
	case "loop":
		spin()
	case "sleep":
		time.Sleep(time.Hour)
	case "oom":
		for {
			hog = append(hog, make([]byte, 1<<20))
		}
	}
}

func spin() {
	for {
	}
}

func main() {}
