package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job"
)

// tracker counts the BMC connections the runners hold open (a job holds its
// system's connection from its first BMC call until it completes), the BMC
// calls in flight and the job-record reads and writes in flight, so the
// sampler can tell jobs that wait between steps (connection open, neither a
// call nor a store operation in flight) from jobs in a step.
type tracker struct {
	open    atomic.Int64
	inCall  atomic.Int64
	inStore atomic.Int64

	// actions is, per system, the job of each state-changing call that
	// succeeded (job.CallFromContext), in the order they returned: what the
	// order and exclusivity checks read.
	mu      sync.Mutex
	actions map[string][]string
	// dials is when each BMC connection began to be dialled: a job's first
	// BMC call, which tells how long the runners took to start the jobs.
	dials []time.Time
}

// dialsAfter gives the quantiles of the dial times after t0: when the jobs
// began to talk to their BMCs.
func (t *tracker) dialsAfter(t0 time.Time) string {
	t.mu.Lock()
	ds := make([]time.Duration, len(t.dials))
	for i, d := range t.dials {
		ds[i] = d.Sub(t0)
	}
	t.mu.Unlock()
	if len(ds) == 0 {
		return "none"
	}
	slices.Sort(ds)
	q := func(f float64) string { return fmtDur(ds[min(int(f*float64(len(ds))), len(ds)-1)]) }
	return fmt.Sprintf("first %s, p50 %s, p90 %s, last %s", fmtDur(ds[0]), q(0.5), q(0.9), fmtDur(ds[len(ds)-1]))
}

// acted notes a state-changing call on sys that succeeded.
func (t *tracker) acted(ctx context.Context, sys string) {
	c, _ := job.CallFromContext(ctx)
	t.mu.Lock()
	if t.actions == nil {
		t.actions = map[string][]string{}
	}
	t.actions[sys] = append(t.actions[sys], c.Job)
	t.mu.Unlock()
}

// trackedDialer dials with d and wraps each driver.
type trackedDialer struct {
	d bmc.Dialer
	t *tracker
}

var _ bmc.Dialer = trackedDialer{}

func (td trackedDialer) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	td.t.mu.Lock()
	td.t.dials = append(td.t.dials, time.Now())
	td.t.mu.Unlock()
	td.t.inCall.Add(1)
	drv, err := td.d.Dial(ctx, ep, creds)
	td.t.inCall.Add(-1)
	if err != nil {
		return nil, err
	}
	return td.t.wrap(drv, ep.SystemKey()), nil
}

// wrap returns a counting driver around d, with OpenSystem only where d has
// it, so the job's connection pool shares sessions exactly as without it.
func (t *tracker) wrap(d bmc.Driver, sys string) bmc.Driver {
	t.open.Add(1)
	td := &trackedDriver{d: d, t: t, sys: sys}
	if _, ok := d.(bmc.SystemOpener); ok {
		return trackedOpener{td}
	}
	return td
}

// trackedDriver forwards every call of a netboot job to d.
type trackedDriver struct {
	d      bmc.Driver
	t      *tracker
	sys    string // bmc.Endpoint.SystemKey of the system it drives
	closed atomic.Bool
}

var (
	_ bmc.Driver             = (*trackedDriver)(nil)
	_ bmc.BootOverrideSetter = (*trackedDriver)(nil)
	_ bmc.BootOverrideGetter = (*trackedDriver)(nil)
	_ bmc.StatsReporter      = (*trackedDriver)(nil)
	_ bmc.SystemOpener       = trackedOpener{}
)

// Each method counts its call in flight around the forwarded call, without
// a closure or a defer: this wraps every BMC call of the run.

func (d *trackedDriver) PowerState(ctx context.Context) (bmc.PowerState, error) {
	d.t.inCall.Add(1)
	st, err := d.d.PowerState(ctx)
	d.t.inCall.Add(-1)
	return st, err
}

func (d *trackedDriver) SetPower(ctx context.Context, a bmc.PowerAction) error {
	d.t.inCall.Add(1)
	err := d.d.SetPower(ctx, a)
	d.t.inCall.Add(-1)
	if err == nil {
		d.t.acted(ctx, d.sys)
	}
	return err
}

func (d *trackedDriver) Close(ctx context.Context) error {
	if d.closed.CompareAndSwap(false, true) {
		d.t.open.Add(-1)
	}
	d.t.inCall.Add(1)
	err := d.d.Close(ctx)
	d.t.inCall.Add(-1)
	return err
}

func (d *trackedDriver) SetBootOverride(ctx context.Context, o bmc.BootOverride) error {
	s, ok := d.d.(bmc.BootOverrideSetter)
	if !ok {
		return fmt.Errorf("driver %T cannot set a boot override: %w", d.d, bmc.ErrNotSupported)
	}
	d.t.inCall.Add(1)
	err := s.SetBootOverride(ctx, o)
	d.t.inCall.Add(-1)
	if err == nil {
		d.t.acted(ctx, d.sys)
	}
	return err
}

func (d *trackedDriver) BootOverride(ctx context.Context) (bmc.BootOverride, error) {
	g, ok := d.d.(bmc.BootOverrideGetter)
	if !ok {
		return bmc.BootOverride{}, fmt.Errorf("driver %T cannot read the boot override: %w", d.d, bmc.ErrNotSupported)
	}
	d.t.inCall.Add(1)
	o, err := g.BootOverride(ctx)
	d.t.inCall.Add(-1)
	return o, err
}

func (d *trackedDriver) Stats() bmc.Stats {
	if sr, ok := d.d.(bmc.StatsReporter); ok {
		return sr.Stats()
	}
	return bmc.Stats{}
}

// trackedOpener is a trackedDriver whose driver can open the other systems
// behind its endpoint on its session.
type trackedOpener struct{ *trackedDriver }

func (o trackedOpener) OpenSystem(ctx context.Context, ep bmc.Endpoint) (bmc.Driver, error) {
	o.t.inCall.Add(1)
	view, err := o.d.(bmc.SystemOpener).OpenSystem(ctx, ep)
	o.t.inCall.Add(-1)
	if err != nil {
		return nil, err
	}
	return o.t.wrap(view, ep.SystemKey()), nil
}
