package bmctest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/fake"
)

// Run is called from a test of your own driver: the factory dials a peer
// (a simulator, a lab BMC) for each subtest. (Compiled, not run: the suite
// needs the *testing.T of a test function; bmc/fake's TestConformance runs
// it on the fake.)
func ExampleRun() {
	testMyDriver := func(t *testing.T) {
		bmctest.Run(t, bmctest.Options{}, func(t *testing.T) bmctest.Target {
			creds := bmc.Credentials{Username: "admin", Password: "pw-Example-9"}
			srv := fake.New(fake.Options{Username: creds.Username, Password: creds.Password})
			ep := bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "127.0.0.1"}
			drv, err := srv.Dial(context.Background(), ep, creds)
			if err != nil {
				t.Fatal(err)
			}
			return bmctest.Target{
				Driver:      drv,
				Credentials: creds,
				Dial: func(ctx context.Context, c bmc.Credentials) (bmc.Driver, error) {
					return srv.Dial(ctx, ep, c)
				},
			}
		})
	}
	_ = testMyDriver // func TestConformance(t *testing.T) { ... } in a _test.go file
}

// A Fence in a call's ctx checks that the driver asks it before every
// request: once closed, nothing more is sent.
func ExampleFence() {
	ctx := context.Background()
	srv := fake.New(fake.Options{Username: "admin", Password: "pw-Example-9"})
	drv, err := srv.Dial(ctx, bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "127.0.0.1"}, bmc.Credentials{Username: "admin", Password: "pw-Example-9"})
	if err != nil {
		panic(err)
	}
	defer drv.Close(ctx)

	f := &bmctest.Fence{}
	fenced := bmc.WithFence(ctx, f)
	_, err = drv.PowerState(fenced)
	fmt.Println("open fence:", err, len(f.Admitted()) > 0)

	f.Close()
	_, err = drv.PowerState(fenced)
	fmt.Println("closed fence refused:", errors.Is(err, bmc.ErrFenced))
	// Output:
	// open fence: <nil> true
	// closed fence refused: true
}
