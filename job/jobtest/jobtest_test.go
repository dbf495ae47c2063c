package jobtest_test

import (
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
)

// TestNetbootOnFake is how a user tests their own job specs: a fake BMC, a
// real Runner, and the finished Job to assert on.
func TestNetbootOnFake(t *testing.T) {
	const addr = "redfish://10.0.0.7/redfish/v1/Systems/1"
	fleet := fake.NewFleet()
	srv, err := fleet.AddNew(addr, fake.Options{Username: "admin", Password: "jobtest-Pw-7731"})
	if err != nil {
		t.Fatal(err)
	}
	creds := bmc.Credentials{Username: "admin", Password: "jobtest-Pw-7731"}
	j := jobtest.Run(t, job.Config{StepperConfig: job.StepperConfig{Dialer: fleet}}, creds, jobtest.Netboot(addr, "", 0), 30*time.Second)
	if j.Status.Result != "Succeeded" {
		t.Fatalf("result %q (%s): %s", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	if got := srv.State().LastBootDevice; got != bmc.BootDevicePXE {
		t.Fatalf("booted from %q, want pxe", got)
	}
}

func TestHoldsSecret(t *testing.T) {
	cases := []struct {
		text, secret string
		want         bool
	}{
		{`{"tasks":[{"bootDevice":{"device":"pxe"}}]}`, "p", false},
		{`{"message":"login with p failed"}`, "p", true},
		{`{"u":"p"}`, "p", true},
		{`pw=p&x`, "p", true},
		{`{"bmc":"redfish://h"}`, "", false},
		{`{"m":"xxhunter2horsexx"}`, "hunter2horse", true},
		{`{"m":"pxe pxe p"}`, "p", true},
	}
	for _, c := range cases {
		if got := jobtest.HoldsSecret(c.text, c.secret); got != c.want {
			t.Errorf("HoldsSecret(%q, %q) = %v, want %v", c.text, c.secret, got, c.want)
		}
	}
}
