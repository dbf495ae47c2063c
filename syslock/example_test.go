package syslock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
)

// Two controller replicas share one Store: while replica-a acts for job
// netboot-1 on a system, replica-b is refused, for the same job as for
// another one, and Read shows who holds it. Whoever ends the job releases
// its lock: here replica-b, after netboot-1 completed.
func Example() {
	ctx := context.Background()
	store := memstore.New()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Owner: "replica-a", Clock: clk})
	b := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Owner: "replica-b", Clock: clk})
	const sys = "10.0.0.5:443/redfish/v1/Systems/1"

	validFor, err := a.Lock(ctx, sys, "netboot-1")
	fmt.Println(validFor < time.Minute, err) // the holder stops a sixth of a lease early
	_, err = b.Lock(ctx, sys, "netboot-1")
	var busy *syslock.BusyError
	fmt.Println(errors.As(err, &busy), busy.SameJob) // the same job, acted for by replica-a
	_, err = b.Lock(ctx, sys, "reimage-7")
	fmt.Println(err)

	info, _ := syslock.Read(ctx, store, sys)
	fmt.Println(info.Holder, info.Owner)
	// netboot-1 completed (a compare-and-swap of the job itself); replica-b
	// saw it and releases its system.
	_ = b.Unlock(ctx, sys, "netboot-1")
	_, err = b.Lock(ctx, sys, "reimage-7")
	fmt.Println(err)
	// Output:
	// true <nil>
	// true true
	// system 10.0.0.5:443/redfish/v1/Systems/1 is held by job "netboot-1" (process "replica-a"); its lease runs out at 2026-01-02T03:05:05Z unless renewed
	// netboot-1 replica-a
	// <nil>
}
