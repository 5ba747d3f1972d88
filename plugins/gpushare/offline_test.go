package gpushare

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOffline places a pod list one pod at a time with the policies' own code, as the FGD paper's simulator does
// (every feasible node scored, the best taken, ties to the first in a fixed node order, a pod that fits nowhere
// dropped): what a policy gives without a real scheduler around it. benchmarks/bench_gpushare_offline.py writes
// the inputs and reads the one line it prints; without GPUSHARE_OFFLINE (a folder of nodes.csv and pods.csv) it
// is skipped. nodes.csv: name,cpu milli,memory MiB,GPUs,model,rank (rank -1: Rank(seed, name)); pods.csv, in
// order: name,cpu milli,memory MiB,GPUs asked (k),milli per GPU (d),models separated by |.
//
// Without GPUSHARE_OFFLINE it places testdata/offline's small cluster under every policy, and each placement is
// checked as it happens: no GPU given more than its 1000 milli or less than nothing, no node's CPU or memory
// overdrawn, every pod placed or dropped once.
func TestOffline(t *testing.T) {
	dir := os.Getenv("GPUSHARE_OFFLINE")
	seed := int64(42)
	if s := os.Getenv("GPUSHARE_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	if dir != "" {
		offline(t, dir, os.Getenv("GPUSHARE_POLICY"), seed)
		return
	}
	for _, policy := range []string{"FGD", "BestFit", "DotProduct", "GpuPacking", "GpuClustering", "Random"} {
		t.Run(policy, func(t *testing.T) {
			placed, dropped, pods := offline(t, filepath.Join("testdata", "offline"), policy, seed)
			if placed+dropped != pods || placed == 0 || dropped == 0 {
				t.Fatalf("%s: placed %d + dropped %d of %d pods (the inputs fill the cluster past full)", policy,
					placed, dropped, pods)
			}
		})
	}
}

// offline places the pods of dir under policy and checks every placement; it prints the figures the benchmark
// reads and returns the pods placed, dropped and read.
func offline(t *testing.T, dir, policy string, seed int64) (int, int, int) {
	t.Helper()
	workloadCache = nil
	type node struct {
		name         string
		mem, memUsed int64
		n            Node
		rank         uint64
		tags         map[string]int
	}
	var nodes []*node
	var capacity int64
	for _, r := range csvRows(t, filepath.Join(dir, "nodes.csv")) {
		free := make([]int64, num(r[3]))
		for i := range free {
			free[i] = MilliPerGPU
		}
		rank := Rank(seed, r[0])
		if v := num(r[5]); v >= 0 {
			rank = uint64(v)
		}
		nodes = append(nodes, &node{name: r[0], mem: num(r[2]), n: Node{CPULeft: num(r[1]), Free: free, Model: r[4]},
			rank: rank, tags: map[string]int{}})
		capacity += num(r[3]) * MilliPerGPU
	}
	rnd := rand.New(rand.NewSource(seed))
	var arrived, used, at100 int64 = 0, 0, -1
	placed, dropped := 0, 0
	rows := csvRows(t, filepath.Join(dir, "pods.csv"))
	for _, r := range rows {
		var models []string
		for _, m := range strings.Split(r[5], "|") {
			if m != "" {
				models = append(models, m)
			}
		}
		d, mem := Demand{CPU: num(r[1]), D: num(r[4]), K: num(r[3]), Models: models}, num(r[2])
		arrived += d.Total()
		var feasible []*node
		for _, n := range nodes {
			if n.mem-n.memUsed >= mem && Fits(n.n, d) {
				feasible = append(feasible, n)
			}
		}
		if len(feasible) == 0 {
			dropped++
		} else {
			var best *node
			if policy == "Random" {
				best = feasible[rnd.Intn(len(feasible))]
			} else {
				bestScore := int64(-1)
				for _, n := range feasible {
					var s int64
					switch policy {
					case "BestFit":
						s = BestFitRaw(n.n, d)
					case "DotProduct":
						s = DotProduct(n.n, d)
					case "GpuPacking":
						s = clamp(GpuPacking(n.n, d))
					case "GpuClustering":
						s = clamp(GpuClustering(n.n, d, n.tags))
					default:
						s, _ = FGD(n.n, d, defaultWorkload(t, dir))
					}
					if s > bestScore || (s == bestScore && n.rank < best.rank) {
						best, bestScore = n, s
					}
				}
			}
			pl := &GPUShare{policy: policy, workload: defaultWorkload(t, dir), rnd: rnd}
			gpus := pl.Choose(best.n, d)
			best.n = After(best.n, d, gpus)
			best.memUsed += mem
			if d.GPU() {
				best.tags[Tag(d)]++
			}
			used += d.Total()
			placed++
			for i, f := range best.n.Free {
				if f < 0 || f > MilliPerGPU {
					t.Fatalf("%s: pod %s left GPU %d of %s with %d milli free", policy, r[0], i, best.name, f)
				}
			}
			if best.n.CPULeft < 0 || best.memUsed > best.mem {
				t.Fatalf("%s: pod %s overdrew %s (CPU left %d, memory %d of %d MiB)", policy, r[0], best.name,
					best.n.CPULeft, best.memUsed, best.mem)
			}
		}
		if at100 < 0 && arrived >= capacity {
			at100 = used
		}
	}
	if used > capacity {
		t.Fatalf("%s: %d milli placed on %d milli of GPUs", policy, used, capacity)
	}
	fmt.Printf("offline %s: placed %d dropped %d allocation@100 %.2f allocation@end %.2f\n", policy, placed, dropped,
		100*float64(at100)/float64(capacity), 100*float64(used)/float64(capacity))
	return placed, dropped, len(rows)
}

var workloadCache []TaskType

// defaultWorkload is FGD's target workload, workload.csv of the inputs: cpu milli,milli per GPU,GPUs,weight.
func defaultWorkload(t *testing.T, dir string) []TaskType {
	if workloadCache == nil {
		for _, r := range csvRows(t, filepath.Join(dir, "workload.csv")) {
			d := Demand{CPU: num(r[0])}
			switch {
			case num(r[2]) > 0:
				d.D, d.K = MilliPerGPU, num(r[2])
			case num(r[1]) > 0:
				d.D, d.K = num(r[1]), 1
			}
			w, _ := strconv.ParseFloat(r[3], 64)
			workloadCache = append(workloadCache, TaskType{Demand: d, Weight: w})
		}
	}
	return workloadCache
}

func csvRows(t *testing.T, path string) [][]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, strings.Split(sc.Text(), ","))
	}
	return out
}

func num(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}
