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
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// Jobs on systems that share one session each record their own calls in
// Status.Wire (issue 22), also a job on the session owner's system after an
// earlier job there (same driver), and the session's logout counts toward
// the job whose completion closed it: the jobs add up to what the BMCs
// received.
func TestStepWirePerJobOnSharedSession(t *testing.T) {
	clk := clock.NewFake(t0)
	fleet := fake.NewFleet()
	const s1, s2 = "redfish://10.0.0.1/redfish/v1/Systems/1", "redfish://10.0.0.1/redfish/v1/Systems/2"
	opts := fake.Options{Power: bmc.PowerOff, PowerTransition: 2 * time.Second, Clock: clk}
	b1, err := fleet.AddNew(s1, opts)
	require.NoError(t, err)
	b2, err := fleet.AddNew(s2, opts)
	require.NoError(t, err)
	s, err := job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: fleet, Clock: clk, PollInterval: 500 * time.Millisecond, AdaptivePoll: job.AdaptivePoll{Disabled: true}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ctx := context.Background()
	newJob := func(name, sys string, op task.PowerOp) (*job.Job, *crd) {
		return &job.Job{Name: name, Generation: 1, CreatedAt: t0, Spec: job.Spec{BMC: sys, Tasks: []task.Spec{{Power: &task.PowerAction{Op: op}}}}}, &crd{}
	}
	step := func(j *job.Job, c *crd) bool {
		res, err := s.Step(ctx, j, c.persist)
		require.NoError(t, err)
		return res.Done
	}
	finish := func(j *job.Job, c *crd) *job.Job {
		for n := 0; n < 100; n++ {
			if step(j, c) {
				got := c.load(t)
				assertCompleted(t, got, conditions.ResultSucceeded)
				require.NotNil(t, got.Status.Wire, j.Name)
				return got
			}
			clk.Advance(500 * time.Millisecond)
		}
		t.Fatalf("job %s not done", j.Name)
		return nil
	}

	a, ca := newJob("a", s1, task.PowerOn)
	b, cb := newJob("b", s2, task.PowerOn)
	require.False(t, step(a, ca)) // dials: the session's owner is system 1's driver
	require.False(t, step(b, cb)) // a view on the session
	ga := finish(a, ca)
	before := len(b1.Calls())
	a2, ca2 := newJob("a2", s1, task.PowerOff) // the owner's driver again
	ga2 := finish(a2, ca2)
	a2Calls := len(b1.Calls()) - before
	gb := finish(b, cb) // the last user: it closes the session
	require.Equal(t, 1, fleet.Logins(s1), "one session for the three jobs")

	assert.EqualValues(t, 1, ga.Status.Wire.Logins, "a opened the session")
	assert.EqualValues(t, 0, ga2.Status.Wire.Logins)
	assert.EqualValues(t, 0, gb.Status.Wire.Logins)
	assert.EqualValues(t, a2Calls, ga2.Status.Wire.Requests, "a2 counts its own calls, not a's on the same driver")
	assert.Len(t, b1.CallsTo(fake.MethodClose), 1)
	assert.EqualValues(t, len(b1.Calls())+len(b2.Calls()), ga.Status.Wire.Requests+ga2.Status.Wire.Requests+gb.Status.Wire.Requests,
		"the jobs add up to the session's calls, b's completion closing it (the logout) included")
}
