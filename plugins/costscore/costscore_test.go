package costscore

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestArgs(t *testing.T) {
	p, err := New(context.Background(), &runtime.Unknown{Raw: []byte(`{"costNanos": 5000}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(CostScore).cost; got != 5*time.Microsecond {
		t.Fatalf("cost %v, want 5µs", got)
	}
	if _, err := New(context.Background(), &runtime.Unknown{Raw: []byte(`{"costNanos": -1}`)}, nil); err == nil {
		t.Fatal("a negative cost was taken")
	}
	if _, err := New(context.Background(), &runtime.Unknown{Raw: []byte(`{"costNanos": "x"}`)}, nil); err == nil {
		t.Fatal("a malformed cost was taken")
	}
	if p, err := New(context.Background(), nil, nil); err != nil || p.(CostScore).cost != 0 {
		t.Fatalf("no args: %v %v", p, err)
	}
}

func TestScoreSpinsForItsCost(t *testing.T) {
	c := CostScore{cost: 2 * time.Millisecond}
	start := time.Now()
	if s, st := c.Score(context.Background(), nil, nil, nil); s != 0 || st != nil {
		t.Fatalf("score %d %v", s, st)
	}
	if el := time.Since(start); el < 2*time.Millisecond {
		t.Fatalf("spun %v, want >= 2ms", el)
	}
}
