package connpool_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/bmc/fake"
)

// Two reads of one system through a pool cost one login: the second Get
// returns the open connection.
func Example() {
	ctx := context.Background()
	b := fake.New(fake.Options{Power: bmc.PowerOn})
	pool := connpool.New(b, 0, nil)
	defer pool.Close(ctx)

	ep, _ := bmc.ParseEndpoint("redfish://10.0.0.7")
	creds := bmc.Credentials{Username: "admin", Password: "secret"}
	for range 2 {
		drv, err := pool.Get(ctx, ep, creds)
		if err != nil {
			fmt.Println(err)
			return
		}
		st, _ := drv.PowerState(ctx)
		fmt.Println(st)
	}
	fmt.Println("logins:", b.Sessions().Logins)
	// Output:
	// On
	// On
	// logins: 1
}
