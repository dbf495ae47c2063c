package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
)

// A job that cannot finish does not start, on the Kubernetes path too
// (issue 34): a netboot BMCJob on a Cray EX-shaped system (its Boot has
// no override) ends NotSupported at task 2 with 0 state-changing requests
// on the wire and the server still on. The same job with
// spec.skipPreflight (kept by the API server: the CRD has the field) finds
// out by trying, after powering the server off.
func TestPreflightOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	c := adminClient(t, env)
	ctx := context.Background()
	sim := newSim(redfishtest.VendorConfig(redfishtest.VendorCrayEX))
	defer sim.Close()
	require.NoError(t, c.Create(ctx, simSecret(ns, "bmc", sim.Credentials())))
	require.NoError(t, c.Create(ctx, netbootJob(ns, "refused", sim.Address("1"), "bmc")))
	startController(t, env, nil, ctlOpts{ns: ns, replica: "r1"})
	waitFor(t, time.Minute, "the job to finish", func() bool { return finished(c, ns, "refused") })

	got := getJob(t, c, ns, "refused")
	assert.Equal(t, conditions.ResultFailed, got.Status.Result)
	assert.Equal(t, conditions.ReasonNotSupported, got.Status.Reason)
	assert.Contains(t, got.Status.Message, "task 2 (")
	assert.Contains(t, got.Status.Message, "the job sent nothing")
	for _, r := range sim.Requests() {
		if r.Method != "GET" && !strings.HasPrefix(r.Path, "/redfish/v1/SessionService/Sessions") {
			t.Errorf("a state-changing request reached the BMC: %s %s", r.Method, r.Path)
		}
	}
	assert.Equal(t, "On", sim.System("1").Power, "the server was left as it was")

	skip := netbootJob(ns, "skipped", sim.Address("1"), "bmc")
	skip.Spec.SkipPreflight = true
	require.NoError(t, c.Create(ctx, skip))
	require.True(t, getJob(t, c, ns, "skipped").Spec.SkipPreflight, "the API server kept spec.skipPreflight")
	waitFor(t, time.Minute, "the job to finish", func() bool { return finished(c, ns, "skipped") })
	got = getJob(t, c, ns, "skipped")
	assert.Equal(t, conditions.ReasonNotSupported, got.Status.Reason)
	assert.Equal(t, "Off", sim.System("1").Power, "without the check the job powered the server off first")
}
