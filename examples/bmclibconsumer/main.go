// Command bmclibconsumer is a module that already uses bmclib v2.3.5's root
// client, as Rufio and most Tinkerbell code do, and imports bmckit's core
// packages, the IPMI driver and the bmclib adapter. CI builds and runs it in
// its own module (GOWORK=off) to prove the module graphs coexist: bmckit's
// core no longer raises gofish for the whole graph.
//
// bmckit's Redfish driver (bmc/redfish) is not imported here: it needs
// gofish v0.26, which removed the gofish/common package that bmclib v2.3.5's
// internal/redfishwrapper imports, so one module cannot build both. See the
// README's "Module layout" for the workaround.
//
// Run it with `go run .` in this directory: it runs one netboot job against
// a fake BMC through bmckit's Runner on the embedded store, and wraps a
// bmclib client with bmckit's adapter.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bmclibv2 "github.com/bmc-toolbox/bmclib/v2"

	"github.com/bmckit/bmckit/bmc"
	bmckitbmclib "github.com/bmckit/bmckit/bmc/bmclib"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/task"
)

// clientProvider lets bmckit's bmclib adapter drive a bmclib root client:
// the client names its methods GetPowerState/SetPowerState/SetBootDevice/
// ResetBMC, the adapter takes a provider's PowerStateGet/PowerSet/
// BootDeviceSet/BmcReset. bmckitbmclib.New(ctx, clientProvider{c}, opts)
// then gives a bmc.Driver whose every call goes through the client.
type clientProvider struct{ c *bmclibv2.Client }

func (p clientProvider) PowerStateGet(ctx context.Context) (string, error) {
	return p.c.GetPowerState(ctx)
}

func (p clientProvider) PowerSet(ctx context.Context, state string) (bool, error) {
	return p.c.SetPowerState(ctx, state)
}

func (p clientProvider) BootDeviceSet(ctx context.Context, dev string, persistent, efi bool) (bool, error) {
	return p.c.SetBootDevice(ctx, dev, persistent, efi)
}

func (p clientProvider) BmcReset(ctx context.Context, resetType string) (bool, error) {
	return p.c.ResetBMC(ctx, resetType)
}

func (p clientProvider) Open(ctx context.Context) error  { return p.c.Open(ctx) }
func (p clientProvider) Close(ctx context.Context) error { return p.c.Close(ctx) }

var _ bmckitbmclib.PowerProvider = clientProvider{}

// bmclibDialer dials BMCs through bmclib's root client, wrapped by bmckit's
// adapter: each Dial builds a client for the job's address and credentials
// and opens it (bmckitbmclib.New calls Open). Register it on a
// bmc.SchemeDialer ("redfish") and a Runner drives Redfish BMCs through
// bmclib, next to bmckit's IPMI driver, in one module. docs/modules.md
// points here; bmc/bmclib's ExampleNew_dialer runs the same wiring.
func bmclibDialer(opts ...bmclibv2.Option) bmc.Dialer {
	return bmc.DialerFunc(func(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
		o := append([]bmclibv2.Option{}, opts...)
		if ep.Port != 0 {
			o = append(o, bmclibv2.WithRedfishPort(strconv.Itoa(ep.Port)))
		}
		c := bmclibv2.NewClient(ep.Host, creds.Username, creds.Password, o...)
		return bmckitbmclib.New(ctx, clientProvider{c}, bmckitbmclib.Options{Endpoint: ep.Redacted()})
	})
}

func main() {
	dir, err := os.MkdirTemp("", "bmclibconsumer")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	res, err := run(context.Background(), filepath.Join(dir, "bmckit.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("job:", res)
}

// run wires bmckit next to bmclib: a Runner on boltstore whose dialer knows
// the fake BMC ("redfish" scheme), bmckit's IPMI driver ("ipmi") and a
// bootstate tracker on the same store; it runs a netboot job on the fake
// BMC and returns its result.
func run(ctx context.Context, path string) (conditions.Result, error) {
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		return "", err
	}
	defer store.Close()

	fleet := fake.NewFleet()
	const addr = "redfish://10.1.2.3/redfish/v1/Systems/1"
	if _, err := fleet.AddNew(addr, fake.Options{Username: "admin", Password: "consumer-Pw-5521"}); err != nil {
		return "", err
	}
	ipmiDialer, err := ipmi.NewDialer(ipmi.Options{})
	if err != nil {
		return "", err
	}
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", fleet)
	dialer.Register("ipmi", ipmiDialer)

	tracker, err := bootstate.NewTracker(bootstate.Config{Store: store, InsecureSkipAuth: true})
	if err != nil {
		return "", err
	}
	r, err := job.NewRunner(job.Config{
		Store: store,
		StepperConfig: job.StepperConfig{
			Dialer:      &dialer,
			Credentials: bmc.StaticCredentials{"lab": {Username: "admin", Password: "consumer-Pw-5521"}},
			Boot:        tracker,
		},
	})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()

	spec := job.Spec{BMC: addr, CredentialsRef: "lab", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
	if _, err := r.Submit(ctx, "netboot", spec); err != nil {
		return "", err
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	j, err := r.Wait(wctx, "netboot")
	if err != nil {
		return "", err
	}
	return j.Status.Result, nil
}
