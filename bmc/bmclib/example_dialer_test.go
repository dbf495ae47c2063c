package bmclib_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/bmckit/bmckit/bmc"
	bmckitbmclib "github.com/bmckit/bmckit/bmc/bmclib"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// client has the method set of bmclib v2's *bmclib.Client that the
// adapter needs (GetPowerState, SetPowerState, SetBootDevice, Open,
// Close). It stands in for bmclib.NewClient(host, user, pass) here, because
// this module cannot import bmclib's root package (it does not build with
// the gofish version bmckit's Redfish driver needs; see docs/modules.md).
// examples/bmclibconsumer wires the real client the same way.
type client struct {
	host, user string
	mu         *sync.Mutex
	power      *string
	calls      *[]string
}

func (c client) Open(ctx context.Context) error  { return nil }
func (c client) Close(ctx context.Context) error { return nil }

func (c client) GetPowerState(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.power, nil
}

func (c client) SetPowerState(ctx context.Context, state string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.calls = append(*c.calls, "power "+state)
	switch strings.ToLower(state) {
	case "off", "soft":
		*c.power = "off"
	default:
		*c.power = "on"
	}
	return true, nil
}

func (c client) SetBootDevice(ctx context.Context, dev string, persistent, efi bool) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.calls = append(*c.calls, fmt.Sprintf("boot %s persistent=%v efi=%v", dev, persistent, efi))
	return true, nil
}

// clientProvider renames a bmclib client's methods to the provider methods
// the adapter takes: GetPowerState to PowerStateGet, and so on.
type clientProvider struct{ c client }

func (p clientProvider) PowerStateGet(ctx context.Context) (string, error) {
	return p.c.GetPowerState(ctx)
}

func (p clientProvider) PowerSet(ctx context.Context, state string) (bool, error) {
	return p.c.SetPowerState(ctx, state)
}

func (p clientProvider) BootDeviceSet(ctx context.Context, dev string, persistent, efi bool) (bool, error) {
	return p.c.SetBootDevice(ctx, dev, persistent, efi)
}

func (p clientProvider) Open(ctx context.Context) error  { return p.c.Open(ctx) }
func (p clientProvider) Close(ctx context.Context) error { return p.c.Close(ctx) }

var _ bmckitbmclib.PowerProvider = clientProvider{}

// A bmclib client becomes a bmckit driver per dial: a bmc.DialerFunc
// builds the client from the job's address and credentials and wraps it
// with New, and a SchemeDialer routes redfish:// addresses to it. The
// Runner then drives the BMC through bmclib.
func ExampleNew_dialer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	power, calls := "on", []string{}

	bmclibDialer := bmc.DialerFunc(func(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
		// With bmclib: c := bmclib.NewClient(ep.Host, creds.Username, creds.Password)
		c := client{host: ep.Host, user: creds.Username, mu: &mu, power: &power, calls: &calls}
		return bmckitbmclib.New(ctx, clientProvider{c}, bmckitbmclib.Options{Endpoint: ep.Redacted()})
	})
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", bmclibDialer)

	runner, err := job.NewRunner(job.Config{
		Store: memstore.New(),
		StepperConfig: job.StepperConfig{
			Dialer:      &dialer,
			Credentials: bmc.StaticCredentials{"lab": {Username: "admin", Password: "pw-Example-7"}},
		},
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- runner.Start(ctx) }()
	_, err = runner.Submit(ctx, "netboot", job.Spec{
		BMC:            "redfish://10.0.0.5/redfish/v1/Systems/1",
		CredentialsRef: "lab",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		},
	})
	if err != nil {
		panic(err)
	}
	j, err := runner.Wait(ctx, "netboot")
	if err != nil {
		panic(err)
	}
	cancel()
	<-done
	fmt.Println("job:", j.Status.Result, j.Status.Message)
	mu.Lock()
	defer mu.Unlock()
	for _, c := range calls {
		fmt.Println(c)
	}
	// Output:
	// job: Succeeded all 3 tasks succeeded
	// power off
	// boot pxe persistent=false efi=true
	// power on
}
