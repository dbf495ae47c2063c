package redfish_test

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
)

// The requests of the verified netboot job (power off, one-time PXE, power
// on; the server On at first, power changes immediate), request by request.
// Before bmc.ReadScope it sent 9 non-poll requests on a basic-auth BMC (11
// with a session's login and logout): SetPower's read repeated Dial's, and
// the task's read-back of the override repeated the driver's, and the power
// on's read repeated that. Now a read made in the same job step with no
// action sent since serves those; every effect is still read back after
// its action. The polls are the reads after each reset (one each here).
func TestNetbootRequests(t *testing.T) {
	const job = "POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset 204\n" + // power off: Dial's read says On
		"GET /redfish/v1/Systems/1 200\n" + // poll: Off
		"PATCH /redfish/v1/Systems/1 204\n" + // the override found is the poll's read
		"GET /redfish/v1/Systems/1 200\n" + // read-back of the override, also the power on's read
		"POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset 204\n" +
		"GET /redfish/v1/Systems/1 200\n" // poll: On
	for _, tc := range []struct {
		name     string
		sessions redfishtest.SessionMode
		want     string
		nonPoll  int
	}{
		{"basic auth", redfishtest.SessionsNone, "GET /redfish/v1/ 200\nGET /redfish/v1/Systems/1 200\n" + job, 6},
		{"session", redfishtest.SessionsCreatedWithBody,
			"GET /redfish/v1/ 200\nPOST /redfish/v1/SessionService/Sessions 201\nGET /redfish/v1/Systems/1 200\n" + job +
				"DELETE /redfish/v1/SessionService/Sessions/1 204\n", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redfishtest.NewServer(redfishtest.Config{Sessions: tc.sessions})
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runJob(t, netbootSpec(srv.Address("1")), srv.Credentials(), testOptions())
			if j.Status.Result != conditions.ResultSucceeded {
				t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
			}
			got := trace(srv.Requests())
			if got != tc.want {
				t.Fatalf("the BMC saw:\n%s\nwant:\n%s", got, tc.want)
			}
			if n := strings.Count(got, "\n") - 2; n != tc.nonPoll { // 2 polls
				t.Fatalf("%d non-poll requests, want %d", n, tc.nonPoll)
			}
			if st := srv.System("1"); st.Power != "On" || st.Boots != 1 || st.BootEnabled != "Disabled" {
				t.Fatalf("server after netboot: %+v", st)
			}
		})
	}
}

// With one-time boot emulated, the restore costs a PATCH and its read-back:
// the override found is read from the power off's poll, and the override
// before the restore from the power on's.
func TestNetbootEmulatedRequests(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Sessions: redfishtest.SessionsNone, BootOnce: redfishtest.BootOnceStoredAsContinuous})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	j := runJob(t, emulated(netbootSpec(srv.Address("1")), true), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
	}
	want := "GET /redfish/v1/ 200\nGET /redfish/v1/Systems/1 200\n" +
		"POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset 204\nGET /redfish/v1/Systems/1 200\n" +
		"PATCH /redfish/v1/Systems/1 204\nGET /redfish/v1/Systems/1 200\n" +
		"POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset 204\nGET /redfish/v1/Systems/1 200\n" +
		"PATCH /redfish/v1/Systems/1 204\nGET /redfish/v1/Systems/1 200\n"
	if got := trace(srv.Requests()); got != want {
		t.Fatalf("the BMC saw:\n%s\nwant:\n%s", got, want)
	}
}
