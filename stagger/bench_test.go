package stagger_test

import (
	"context"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/stagger"
	"github.com/bmckit/bmckit/storage/memstore"
)

// What a power request costs the gate, on memstore with a group of 10
// slots per second and the clock moving 200 ms per request (so the record
// stays at its steady size): Admit (one write, stamped at the grant) against
// AdmitHeld, the request's bmc.Admit under its ctx, and release (two writes).
// cpu-ns/op is the process's CPU time (getrusage) per request.
func BenchmarkAdmit(b *testing.B) {
	clk := clock.NewFake(t0)
	l := newLimiterB(b, clk)
	ctx := context.Background()
	b.ReportAllocs()
	c0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		clk.Advance(200 * time.Millisecond)
		if w, err := l.Admit(ctx, sys(1, i%200), "j", 0); err != nil || w != 0 {
			b.Fatalf("Admit: %v %v", w, err)
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkAdmitHeld(b *testing.B) {
	clk := clock.NewFake(t0)
	l := newLimiterB(b, clk)
	ctx := context.Background()
	b.ReportAllocs()
	c0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		clk.Advance(200 * time.Millisecond)
		send, release, w, err := l.AdmitHeld(ctx, sys(1, i%200), "j", 0)
		if err != nil || w != 0 {
			b.Fatalf("AdmitHeld: %v %v", w, err)
		}
		if err := bmc.Admit(send); err != nil {
			b.Fatal(err)
		}
		release(ctx)
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

func newLimiterB(b *testing.B, clk *clock.Fake) *stagger.Limiter {
	l, err := stagger.New(stagger.Config{Store: memstore.New(), Group: rack, Limit: 10, Interval: time.Second, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	return l
}
