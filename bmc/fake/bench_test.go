package fake_test

import (
	"context"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
)

// The fake's own cost per call, so runner benchmarks on the fake can tell
// how much of a task is the fake.

func BenchmarkPowerState(b *testing.B) {
	srv := fake.New(fake.Options{})
	d, _ := srv.Dial(context.Background(), testEP, bmc.Credentials{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.PowerState(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSetPowerCycle(b *testing.B) {
	srv := fake.New(fake.Options{Power: bmc.PowerOn})
	d, _ := srv.Dial(context.Background(), testEP, bmc.Credentials{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := d.SetPower(ctx, bmc.PowerActionCycle); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDialClose(b *testing.B) {
	f := fake.NewFleet()
	if _, err := f.AddNew("redfish://10.0.0.1/redfish/v1/Systems/1", fake.Options{Username: "u", Password: "p"}); err != nil {
		b.Fatal(err)
	}
	ep, _ := bmc.ParseEndpoint("redfish://10.0.0.1/redfish/v1/Systems/1")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := f.Dial(ctx, ep, bmc.Credentials{Username: "u", Password: "p"})
		if err != nil {
			b.Fatal(err)
		}
		_ = d.Close(ctx)
	}
}

func BenchmarkPowerStateParallel(b *testing.B) {
	srv := fake.New(fake.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d, _ := srv.Dial(ctx, testEP, bmc.Credentials{})
		defer d.Close(ctx)
		for pb.Next() {
			if _, err := d.PowerState(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPowerStateLatency is a call that waits out its latency on the
// wall clock under a ctx that can be cancelled, as runners' calls do: its
// time is mostly the wait, its allocations are the fake's.
func BenchmarkPowerStateLatency(b *testing.B) {
	srv := fake.New(fake.Options{Latency: time.Microsecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, _ := srv.Dial(ctx, testEP, bmc.Credentials{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.PowerState(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
