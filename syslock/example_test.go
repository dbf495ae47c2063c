package syslock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
)

// Two controller replicas share one Store: while replica-a acts for job
// netboot-1 on a system, replica-b is refused, for the same job as for
// another one, and Read shows who holds it.
func Example() {
	ctx := context.Background()
	store := memstore.New()
	a := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Owner: "replica-a"})
	b := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Owner: "replica-b"})
	const sys = "10.0.0.5:443/redfish/v1/Systems/1"

	validFor, err := a.Lock(ctx, sys, "netboot-1")
	fmt.Println(validFor < time.Minute, err) // the holder stops a sixth of a lease early
	_, err = b.Lock(ctx, sys, "netboot-1")
	fmt.Println(errors.Is(err, syslock.ErrBusy))
	_, err = b.Lock(ctx, sys, "reimage-7")
	fmt.Println(err)

	info, _ := syslock.Read(ctx, store, sys)
	fmt.Println(info.Holder, info.Owner)
	_ = a.Unlock(ctx, sys, "netboot-1")
	_, err = b.Lock(ctx, sys, "reimage-7")
	fmt.Println(err)
	// Output:
	// true <nil>
	// true
	// system 10.0.0.5:443/redfish/v1/Systems/1 is held by job "netboot-1", acted for by "replica-a"
	// netboot-1 replica-a
	// <nil>
}
