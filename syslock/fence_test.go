package syslock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
)

// A Runner step's ctx ends when its lease's fence lapses, by a timer of its
// own (not the Runner's loop), and not before: a renewal that extends the
// fence while the step runs extends the step.
func TestLapseWatchEndsTheStepWhenTheFenceLapses(t *testing.T) {
	start := time.Now()
	f := NewFence(clock.Real{}, start, "sys")
	f.Set(start.Add(30 * time.Millisecond))
	w := LapseWatch{F: f}
	ctx, cancel := context.WithCancel(bmc.WithFence(context.Background(), f))
	defer cancel()
	w.Arm(cancel)
	f.Set(start.Add(150 * time.Millisecond)) // renewed while the step runs
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the step's ctx outlived its lease")
	}
	if since := time.Since(start); since < 150*time.Millisecond {
		t.Fatalf("canceled %v after the start, before the renewed validity (150ms)", since)
	}
	if err := bmc.Admit(ctx); !errors.Is(err, bmc.ErrFenced) {
		t.Fatalf("Admit after the lapse: %v, want ErrFenced", err)
	}

	// Re-armed for the next step, and disarmed when it ends: the next
	// step's ctx is left alone.
	f.Set(time.Now().Add(20 * time.Millisecond))
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	w.Arm(cancel2)
	w.Disarm()
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	f.Set(time.Now().Add(20 * time.Millisecond))
	w.Arm(cancel3)
	select {
	case <-ctx3.Done():
	case <-time.After(time.Minute):
		t.Fatal("a re-armed watch did not fire")
	}
	if ctx2.Err() != nil {
		t.Fatal("a disarmed step was canceled")
	}
}

// A closed fence (lost lease) admits nothing at once, and a fence admits
// nothing at or after its validity end on the fence's own clock.
func TestLeaseFenceAdmit(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	f := NewFence(clk, clk.Now(), "sys")
	if err := f.Admit(); !errors.Is(err, bmc.ErrFenced) {
		t.Fatalf("a fence never set admits: %v", err)
	}
	f.Set(clk.Now().Add(time.Second))
	if err := f.Admit(); err != nil {
		t.Fatalf("valid fence refused: %v", err)
	}
	clk.Advance(time.Second)
	var fe *FencedError
	if err := f.Admit(); !errors.As(err, &fe) || fe.System != "sys" {
		t.Fatalf("at the validity end: %v, want a FencedError for sys", err)
	}
	f.Set(clk.Now().Add(time.Second))
	f.Close()
	if err := f.Admit(); !errors.Is(err, bmc.ErrFenced) {
		t.Fatalf("closed fence admits: %v", err)
	}
}
