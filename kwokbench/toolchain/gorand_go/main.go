// gorand answers draws from Go's math/rand (its Go 1 generator, rand.New(rand.NewSource(seed))) one line at a
// time, so that kwokbench can replay a program that seeded it, the FGD paper's simulator among them, draw for
// draw. Written for kwokbench; it uses the standard library only.
//
// The first line of stdin is the seed. Then each line is one request, answered by one line on stdout:
//
//	I      rand.Int()
//	N n    rand.Intn(n)
//	S n    rand.Shuffle(n, swap) applied to 0..n-1: the resulting order, space-separated
//	P n    rand.Perm(n), space-separated
package main

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	if !in.Scan() {
		fail("no seed on the first line")
	}
	seed, err := strconv.ParseInt(strings.TrimSpace(in.Text()), 10, 64)
	if err != nil {
		fail("the seed is not an integer: " + in.Text())
	}
	r := rand.New(rand.NewSource(seed))
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		n := 0
		if len(f) > 1 {
			if n, err = strconv.Atoi(f[1]); err != nil || n <= 0 {
				fail("not a positive count: " + in.Text())
			}
		}
		switch f[0] {
		case "I":
			fmt.Fprintln(out, r.Int())
		case "N":
			fmt.Fprintln(out, r.Intn(n))
		case "S":
			order := make([]int, n)
			for i := range order {
				order[i] = i
			}
			r.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
			writeInts(out, order)
		case "P":
			writeInts(out, r.Perm(n))
		default:
			fail("unknown request: " + in.Text())
		}
		if err := out.Flush(); err != nil {
			os.Exit(1)
		}
	}
}

func writeInts(out *bufio.Writer, xs []int) {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	fmt.Fprintln(out, strings.Join(parts, " "))
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "gorand: "+msg)
	os.Exit(2)
}
