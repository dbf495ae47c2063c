package redfish_test

import (
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
)

// job.Status.Wire counts everything that went on the wire: a finished job's
// includes the logout, and a job whose login failed still has one.
func TestJobWireCountsEverything(t *testing.T) {
	t.Run("logout", func(t *testing.T) {
		srv := redfishtest.NewServer(redfishtest.Config{})
		t.Cleanup(srv.Close)
		srv.SetPower("1", "On")
		j := runJob(t, netbootSpec(srv.Address("1")), srv.Credentials(), testOptions())
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
		}
		if w := j.Status.Wire; w == nil || w.Requests != int64(len(srv.Requests())) {
			t.Fatalf("job wire %+v; the server saw %d requests (the logout included)", w, len(srv.Requests()))
		}
	})
	t.Run("failed login", func(t *testing.T) {
		srv := redfishtest.NewServer(redfishtest.Config{})
		t.Cleanup(srv.Close)
		j := runJob(t, netbootSpec(srv.Address("1")), bmc.Credentials{Username: "admin", Password: "not-the-password-7"}, testOptions())
		if j.Status.Reason != conditions.ReasonUnauthorized {
			t.Fatalf("job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
		}
		if w := j.Status.Wire; w == nil || w.Requests == 0 || w.Requests != int64(len(srv.Requests())) {
			t.Fatalf("job wire %+v after a failed login; the server saw %d requests", w, len(srv.Requests()))
		}
	})
}
