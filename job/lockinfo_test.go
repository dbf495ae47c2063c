package job_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// A Get on behalf of no job (package monitor reading through the pool) keeps
// the connection attributed to the job that uses it, so a stale Release by
// another job does not close it.
func TestPoolGetKeepsTheJobsClaimOnTheConnection(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	url := "redfish://10.0.0.9/redfish/v1/Systems/1"
	fleet := fake.NewFleet()
	srv, err := fleet.AddNew(url, fake.Options{Clock: clk, PowerTransition: time.Minute})
	require.NoError(t, err)
	st, err := job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: fleet, Clock: clk})
	require.NoError(t, err)
	defer st.Close(ctx)

	j := &job.Job{Name: "on-1", Generation: 1, CreatedAt: clk.Now(), Spec: job.Spec{BMC: url, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}}}
	res, err := st.Step(ctx, j, func(context.Context, *job.Job) error { return nil })
	require.NoError(t, err)
	require.False(t, res.Done, "the power change takes a minute")

	ep, err := bmc.ParseEndpoint(url)
	require.NoError(t, err)
	_, err = st.Pool().Get(ctx, ep, bmc.Credentials{})
	require.NoError(t, err)
	require.NoError(t, st.Release(ctx, "an-earlier-job", url))
	assert.Equal(t, 1, st.Pool().Len(), "the job's connection stays open")
	assert.Equal(t, 1, srv.Sessions().Open)
	assert.Equal(t, 1, srv.Sessions().Logins)
}
