package redfish_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/retry"
	"github.com/bmckit/bmckit/task"
)

// invisibleOn starts a redfishtest BMC whose pending changes are invisible
// (PowerDelay 2 s on clk, no transitional state), with system 1 Off, and
// has another client request On: the system keeps reporting Off until the
// On lands.
func invisibleOn(t *testing.T, clk redfishtest.Clock) *redfishtest.Server {
	t.Helper()
	srv := redfishtest.NewServer(redfishtest.Config{PowerDelay: 2 * time.Second, InvisiblePending: true, Clock: clk})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "Off")
	drv, err := redfish.NewDialer(settleRedfishOptions()).DialDriver(context.Background(), srv.Endpoint("1"), srv.Credentials())
	require.NoError(t, err)
	require.NoError(t, drv.SetPower(context.Background(), bmc.PowerActionOn))
	st, err := drv.PowerState(context.Background())
	require.NoError(t, err)
	require.Equal(t, bmc.PowerOff, st, "the pending On must be invisible")
	require.NoError(t, drv.Close(context.Background()))
	return srv
}

func settleRedfishOptions() redfish.Options {
	return redfish.Options{RetryDelay: time.Millisecond, RequestTimeout: 5 * time.Second, RequestsPerSecond: -1}
}

func runPowerOff(t *testing.T, srv *redfishtest.Server, settle time.Duration) *job.Job {
	t.Helper()
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(settleRedfishOptions()))
	spec := job.Spec{BMC: srv.Address("1"), CredentialsRef: "lab", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}, Timeout: task.Duration{Duration: 20 * time.Second}},
	}}
	return jobtest.Run(t, job.Config{
		StepperConfig: job.StepperConfig{
			Dialer:       &dialer,
			PollInterval: 50 * time.Millisecond,
			Retry:        retry.Policy{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond, Jitter: 0.2},
			PowerSettle:  settle,
		},

		ScanInterval: 20 * time.Millisecond,
	}, srv.Credentials(), spec, time.Minute)
}

// Without PowerSettle (the default), job [power off] reads Off while another
// client's On is still landing invisibly, sends nothing and succeeds; the
// server then turns On. The simulator's clock is fake: the On lands only when
// the test advances it, after the job completed.
func TestPowerOffInvisiblePendingWithoutSettle(t *testing.T) {
	clk := clock.NewFake(time.Now())
	srv := invisibleOn(t, clk)
	j := runPowerOff(t, srv, 0)
	jobtest.AssertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 0, srv.System("1").Resets["ForceOff"], "nothing sent: Off was read as already there")
	clk.Advance(2 * time.Second)
	assert.Equal(t, "On", srv.System("1").Power, "the pending On landed after the job reported Succeeded")
}

// With PowerSettle 3 s, the job keeps reading Off for the window; the On
// lands 2 s after it was requested and shows, so the job sends its off, and
// ends with the server Off.
func TestPowerOffInvisiblePendingWithSettle(t *testing.T) {
	srv := invisibleOn(t, nil)
	j := runPowerOff(t, srv, 3*time.Second)
	jobtest.AssertCompleted(t, j, conditions.ResultSucceeded)
	st := srv.System("1")
	assert.Equal(t, "Off", st.Power, "server after the job")
	assert.Empty(t, st.Pending, "no change pending after the job")
	assert.Equal(t, 1, st.Resets["ForceOff"], "the off was sent once the On landed")
	var targets []string
	for _, c := range srv.PowerChanges() {
		targets = append(targets, c.Target)
	}
	assert.Equal(t, []string{"On", "Off"}, targets, "accepted power changes")
}
