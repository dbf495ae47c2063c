package fake_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
)

func mustEP(t *testing.T, raw string) bmc.Endpoint {
	t.Helper()
	ep, err := bmc.ParseEndpoint(raw)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func sysURL(host string, i int) string {
	return fmt.Sprintf("redfish://%s/redfish/v1/Systems/%d", host, i)
}

func TestOpenSystemSharesTheLogin(t *testing.T) {
	const n = 20
	f := fake.NewFleet()
	creds := bmc.Credentials{Username: "admin", Password: "pw-shared-secret"}
	systems := make([]*fake.BMC, n)
	for i := range systems {
		b, err := f.AddNew(sysURL("10.0.0.1", i+1), fake.Options{Username: creds.Username, Password: creds.Password})
		if err != nil {
			t.Fatal(err)
		}
		systems[i] = b
	}
	ctx := context.Background()
	owner, err := f.Dial(ctx, mustEP(t, sysURL("10.0.0.1", 1)), creds)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	opener, ok := owner.(bmc.SystemOpener)
	if !ok {
		t.Fatal("a Fleet driver does not implement bmc.SystemOpener")
	}
	drivers := make([]bmc.Driver, n)
	drivers[0] = owner
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 1; i < n; i++ {
		ep := mustEP(t, sysURL("10.0.0.1:443", i+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := opener.OpenSystem(ctx, ep)
			if err != nil {
				errs[i] = err
				return
			}
			drivers[i] = d
			errs[i] = d.SetPower(ctx, bmc.PowerActionOn)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("system %d: %v", i+1, err)
		}
	}
	for i := 1; i < n; i++ {
		if st := systems[i].State(); st.Power != bmc.PowerOn || st.Boots != 1 {
			t.Errorf("system %d: %+v, want on after one boot", i+1, st)
		}
		if s := systems[i].Sessions(); s.Logins != 0 || s.Open != 0 {
			t.Errorf("system %d counted sessions %+v for an opened system", i+1, s)
		}
	}
	if st := systems[0].State(); st.Power != bmc.PowerOff {
		t.Errorf("system 1 is %s, want off (untouched)", st.Power)
	}
	if got := f.Logins("redfish://10.0.0.1"); got != 1 {
		t.Errorf("Fleet.Logins = %d, want 1 for %d systems", got, n)
	}
	if s := systems[0].Sessions(); s.Logins != 1 || s.Open != 1 {
		t.Errorf("dialed BMC sessions %+v, want one login, one open", s)
	}
	sess := owner.(*fake.Driver).Session()
	for _, c := range systems[5].Calls() {
		if c.Session != sess {
			t.Errorf("call %v on an opened system logged under session %d, want the shared %d", c, c.Session, sess)
		}
	}
	if got := systems[5].CallsTo(fake.MethodOpenSystem); len(got) != 1 {
		t.Errorf("OpenSystem calls logged on system 6: %v, want one", got)
	}
	// Dial on the owner; OpenSystem and SetPower on each opened driver: each
	// counts its own calls, the owner the session's connection and login.
	if got, want := drivers[0].(bmc.StatsReporter).Stats(), (bmc.Stats{Requests: 1, Connections: 1, Logins: 1}); got != want {
		t.Errorf("owner Stats %+v, want %+v", got, want)
	}
	for i := 1; i < n; i++ {
		if got, want := drivers[i].(bmc.StatsReporter).Stats(), (bmc.Stats{Requests: 2}); got != want {
			t.Errorf("driver %d Stats %+v, want its own %+v", i+1, got, want)
		}
	}
}

func TestOpenSystemRefusals(t *testing.T) {
	f := fake.NewFleet()
	for _, u := range []string{sysURL("10.0.0.1", 1), sysURL("10.0.0.1", 2), sysURL("10.0.0.2", 1), "redfish://10.0.0.1:8443/redfish/v1/Systems/3", "ipmi://10.0.0.1"} {
		if _, err := f.AddNew(u, fake.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	d, err := f.Dial(ctx, mustEP(t, sysURL("10.0.0.1", 1)), bmc.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	o := d.(bmc.SystemOpener)
	for _, u := range []string{sysURL("10.0.0.2", 1), "redfish://10.0.0.1:8443/redfish/v1/Systems/3", "redfish+http://10.0.0.1:443/redfish/v1/Systems/2", "ipmi://10.0.0.1"} {
		_, err := o.OpenSystem(ctx, mustEP(t, u))
		var oe *bmc.OpError
		if !errors.Is(err, bmc.ErrNotSupported) || !errors.As(err, &oe) {
			t.Errorf("OpenSystem(%s) = %v, want an OpError wrapping ErrNotSupported", u, err)
		}
	}
	_, err = o.OpenSystem(ctx, mustEP(t, sysURL("10.0.0.1", 9)))
	if err == nil || errors.Is(err, bmc.ErrNotSupported) || bmc.IsTransient(err) {
		t.Errorf("OpenSystem of an unregistered system = %v, want a permanent error", err)
	}
	// Faults injected on the opened system's BMC apply.
	two := f.Get(sysURL("10.0.0.1", 2))
	two.FailNext(fake.MethodOpenSystem, 1, bmc.Transient(errors.New("injected")))
	if _, err := o.OpenSystem(ctx, mustEP(t, sysURL("10.0.0.1", 2))); err == nil || !bmc.IsTransient(err) {
		t.Errorf("OpenSystem with an injected failure = %v", err)
	}
	if _, err := o.OpenSystem(ctx, mustEP(t, sysURL("10.0.0.1", 2))); err != nil {
		t.Errorf("OpenSystem after the injected failure: %v", err)
	}

	// A driver dialed from one BMC serves only its own system.
	single := fake.New(fake.Options{})
	sd, err := single.Dial(ctx, mustEP(t, sysURL("10.0.0.9", 1)), bmc.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close(ctx)
	if _, err := sd.(bmc.SystemOpener).OpenSystem(ctx, mustEP(t, sysURL("10.0.0.9", 2))); !errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("OpenSystem of another system without a Fleet = %v, want ErrNotSupported", err)
	}
	same, err := sd.(bmc.SystemOpener).OpenSystem(ctx, mustEP(t, sysURL("10.0.0.9", 1)))
	if err != nil {
		t.Fatalf("OpenSystem of its own system without a Fleet: %v", err)
	}
	mustPower(t, same, bmc.PowerOff)
}

func TestOpenSystemClose(t *testing.T) {
	f := fake.NewFleet()
	var systems []*fake.BMC
	for i := 1; i <= 3; i++ {
		b, err := f.AddNew(sysURL("10.0.0.1", i), fake.Options{})
		if err != nil {
			t.Fatal(err)
		}
		systems = append(systems, b)
	}
	ctx := context.Background()
	owner, err := f.Dial(ctx, mustEP(t, sysURL("10.0.0.1", 1)), bmc.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	o := owner.(bmc.SystemOpener)
	two, err := o.OpenSystem(ctx, mustEP(t, sysURL("10.0.0.1", 2)))
	if err != nil {
		t.Fatal(err)
	}
	three, err := o.OpenSystem(ctx, mustEP(t, sysURL("10.0.0.1", 3)))
	if err != nil {
		t.Fatal(err)
	}

	if err := two.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := two.PowerState(ctx); !errors.Is(err, fake.ErrClosed) {
		t.Fatalf("PowerState on a closed opened driver = %v, want ErrClosed", err)
	}
	mustPower(t, owner, bmc.PowerOff)
	mustPower(t, three, bmc.PowerOff)
	if s := systems[0].Sessions(); s.Open != 1 {
		t.Fatalf("closing an opened system changed the dialed BMC's sessions: %+v", s)
	}

	// The dialed BMC's sessions expiring ends the shared one.
	systems[0].ExpireSessions()
	if _, err := three.PowerState(ctx); !errors.Is(err, bmc.ErrSessionExpired) || !bmc.IsTransient(err) {
		t.Fatalf("PowerState on an opened system after the session expired = %v, want transient ErrSessionExpired", err)
	}

	owner2, err := f.Dial(ctx, mustEP(t, sysURL("10.0.0.1", 1)), bmc.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	four, err := owner2.(bmc.SystemOpener).OpenSystem(ctx, mustEP(t, sysURL("10.0.0.1", 3)))
	if err != nil {
		t.Fatal(err)
	}
	if err := owner2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := four.PowerState(ctx); !errors.Is(err, bmc.ErrSessionExpired) {
		t.Fatalf("PowerState after the owner closed = %v, want ErrSessionExpired", err)
	}
	if _, err := four.(bmc.SystemOpener).OpenSystem(ctx, mustEP(t, sysURL("10.0.0.1", 2))); err == nil {
		t.Fatal("OpenSystem after the owner closed succeeded")
	}
	if err := four.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_ = owner.Close(ctx)
	if s := systems[0].Sessions(); s.Open != 0 || s.Logins != 2 {
		t.Fatalf("dialed BMC sessions %+v, want 2 logins, none open", s)
	}
	if got := f.Logins(sysURL("10.0.0.1", 3)); got != 2 {
		t.Fatalf("Fleet.Logins = %d, want 2", got)
	}
}
