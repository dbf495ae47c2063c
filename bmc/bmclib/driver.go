package bmclib

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/powerplan"
)

// PowerProvider is the part of a bmclib provider the adapter requires: the
// method sets of bmclib's PowerStateGetter and PowerSetter (package
// github.com/bmc-toolbox/bmclib/v2/bmc).
type PowerProvider interface {
	PowerStateGet(ctx context.Context) (state string, err error)
	PowerSet(ctx context.Context, state string) (ok bool, err error)
}

// Optional provider methods, as bmclib's bmc package declares them.
type (
	opener interface {
		Open(ctx context.Context) error
	}
	closer interface {
		Close(ctx context.Context) error
	}
	bootDeviceSetter interface {
		BootDeviceSet(ctx context.Context, bootDevice string, setPersistent, efiBoot bool) (ok bool, err error)
	}
	bmcResetter interface {
		BmcReset(ctx context.Context, resetType string) (ok bool, err error)
	}
)

var (
	_ bmc.Driver             = (*Driver)(nil)
	_ bmc.BootOverrideSetter = (*Driver)(nil)
	_ bmc.BMCResetter        = (*Driver)(nil)
	_ bmc.StatsReporter      = (*Driver)(nil)
)

// Options configure [New]. The zero value is ready to use.
type Options struct {
	// Endpoint names the BMC in errors (a URL without credentials).
	// Defaults to "".
	Endpoint string

	// Timeout bounds every call to the provider (the provider's own
	// retries included). Defaults to 60s.
	Timeout time.Duration

	// DialTimeout bounds the provider's Open in New (which, for the
	// ipmitool provider, is also the first exchange with the BMC). Defaults
	// to Timeout.
	DialTimeout time.Duration

	// Classify maps a provider error to bmckit's contract (wrap
	// bmc.ErrUnauthorized or bmc.ErrNotSupported, or mark it with
	// bmc.Transient or bmc.Permanent). elapsed is how long the call took.
	// Defaults to marking every provider error transient.
	Classify func(err error, elapsed time.Duration) error

	// SessionPerCall says every provider call opens its own BMC session
	// (true of the ipmitool provider: one ipmitool run per call), so Stats
	// counts a connection and a login per call. Defaults to false: one per
	// Open.
	SessionPerCall bool

	// Logger receives debug logs (V(1)). Defaults to logr.Discard(); a
	// logger in the call's context is preferred when present.
	Logger logr.Logger
}

// Driver is a bmclib provider behind [bmc.Driver]. Calls are serialized.
// It implements [bmc.BootOverrideSetter] and [bmc.BMCResetter], failing
// with [bmc.ErrNotSupported] when the provider lacks BootDeviceSet or
// BmcReset, and [bmc.StatsReporter], which counts provider calls. It does
// not implement [bmc.BootOverrideGetter]: the ipmitool provider cannot read
// the override back.
type Driver struct {
	p        PowerProvider
	opts     Options
	sem      chan struct{}
	closed   bool // guarded by sem
	requests atomic.Int64
	sessions atomic.Int64
}

// New wraps provider p and opens it (calls its Open method, if any).
func New(ctx context.Context, p PowerProvider, opts Options) (*Driver, error) {
	if p == nil {
		return nil, &bmc.OpError{Op: "dial", Endpoint: opts.Endpoint, Err: bmc.Permanent(errors.New("bmclib adapter: nil provider"))}
	}
	if opts.Timeout < 0 {
		return nil, &bmc.OpError{Op: "dial", Endpoint: opts.Endpoint, Err: bmc.Permanent(fmt.Errorf("bmclib adapter: invalid Options.Timeout %s: must not be negative", opts.Timeout))}
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Minute
	}
	if opts.DialTimeout < 0 {
		return nil, &bmc.OpError{Op: "dial", Endpoint: opts.Endpoint, Err: bmc.Permanent(fmt.Errorf("bmclib adapter: invalid Options.DialTimeout %s: must not be negative", opts.DialTimeout))}
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = opts.Timeout
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.Classify == nil {
		opts.Classify = func(err error, _ time.Duration) error { return bmc.Transient(err) }
	}
	d := &Driver{p: p, opts: opts, sem: make(chan struct{}, 1)}
	if o, ok := p.(opener); ok {
		err := d.callWithin(ctx, "dial", opts.DialTimeout, "the dial timeout", func(ctx context.Context) error { return o.Open(ctx) })
		if err != nil {
			return nil, err
		}
		if !opts.SessionPerCall {
			d.sessions.Add(1)
		}
	}
	return d, nil
}

// Stats implements [bmc.StatsReporter]: Requests counts provider calls (an
// ipmitool provider call runs ipmitool one to three times); Connections and
// Logins count the provider's Open, or every call with
// Options.SessionPerCall.
func (d *Driver) Stats() bmc.Stats {
	n := d.sessions.Load()
	return bmc.Stats{Requests: d.requests.Load(), Connections: n, Logins: n}
}

// call runs one provider call under the lock with Options.Timeout,
// classifying its error.
func (d *Driver) call(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return d.callWithin(ctx, op, d.opts.Timeout, "the call timeout", fn)
}

// callWithin is call with another bound than Options.Timeout; bound names
// it in errors.
func (d *Driver) callWithin(ctx context.Context, op string, limit time.Duration, bound string, fn func(ctx context.Context) error) error {
	fail := func(err error) error { return &bmc.OpError{Op: op, Endpoint: d.opts.Endpoint, Err: err} }
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return fail(fmt.Errorf("waiting for the connection: %w", ctx.Err()))
	}
	defer func() { <-d.sem }()
	if d.closed {
		return fail(bmc.Permanent(errors.New("driver is closed")))
	}
	return d.callLockedWithin(ctx, op, limit, bound, fn)
}

func (d *Driver) callLocked(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return d.callLockedWithin(ctx, op, d.opts.Timeout, "the call timeout", fn)
}

func (d *Driver) callLockedWithin(ctx context.Context, op string, limit time.Duration, bound string, fn func(ctx context.Context) error) error {
	fail := func(err error) error { return &bmc.OpError{Op: op, Endpoint: d.opts.Endpoint, Err: err} }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	// The fence, right before the provider runs (one ipmitool run, or
	// one request, per call).
	if err := bmc.Admit(ctx); err != nil {
		return fail(err)
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	d.requests.Add(1)
	if d.opts.SessionPerCall {
		d.sessions.Add(1)
	}
	err := fn(cctx)
	if err == nil {
		return nil
	}
	elapsed := time.Since(start)
	d.logger(ctx).V(1).Info("bmclib provider call failed", "op", op, "endpoint", bmc.RedactURL(d.opts.Endpoint), "elapsed", elapsed, "error", err.Error())
	switch {
	case ctx.Err() != nil:
		return fail(fmt.Errorf("%w (provider: %v)", ctx.Err(), err))
	case cctx.Err() != nil:
		return fail(bmc.Transient(fmt.Errorf("no result within %s %s (is the BMC reachable?): %w (provider: %v)", bound, limit, cctx.Err(), err)))
	}
	return fail(d.opts.Classify(err, elapsed))
}

func (d *Driver) logger(ctx context.Context) logr.Logger {
	if l, err := logr.FromContext(ctx); err == nil {
		return l
	}
	return d.opts.Logger
}

// okErr folds bmclib's (ok, err) into one error.
func okErr(what string, ok bool, err error) error {
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: the provider reported failure without an error", what)
	}
	return nil
}

// PowerState implements [bmc.Driver], normalizing the provider's string
// with [NormalizePowerState].
func (d *Driver) PowerState(ctx context.Context) (bmc.PowerState, error) {
	st := bmc.PowerUnknown
	err := d.call(ctx, "power status", func(ctx context.Context) error {
		var err error
		st, err = d.powerState(ctx)
		return err
	})
	return st, err
}

func (d *Driver) powerState(ctx context.Context) (bmc.PowerState, error) {
	s, err := d.p.PowerStateGet(ctx)
	if err != nil {
		return bmc.PowerUnknown, err
	}
	return NormalizePowerState(s), nil
}

// bmclibAction is the bmclib PowerSet state string for each step.
var bmclibAction = map[powerplan.Step]string{
	powerplan.StepOn:      "on",
	powerplan.StepOff:     "off",
	powerplan.StepSoftOff: "soft",
	powerplan.StepCycle:   "cycle",
	powerplan.StepReset:   "reset",
}

// SetPower implements [bmc.Driver]: it reads the power state, then requests
// the one bmclib action that carries out action from there (nothing when
// the server is already there; "on" for cycle or reset on a server that is
// off).
func (d *Driver) SetPower(ctx context.Context, action bmc.PowerAction) error {
	op := "power " + string(action)
	if !action.Valid() {
		_, err := powerplan.Plan(bmc.PowerUnknown, action)
		return &bmc.OpError{Op: op, Endpoint: d.opts.Endpoint, Err: bmc.Permanent(err)}
	}
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return &bmc.OpError{Op: op, Endpoint: d.opts.Endpoint, Err: fmt.Errorf("waiting for the connection: %w", ctx.Err())}
	}
	defer func() { <-d.sem }()
	if d.closed {
		return &bmc.OpError{Op: op, Endpoint: d.opts.Endpoint, Err: bmc.Permanent(errors.New("driver is closed"))}
	}
	state := bmc.PowerUnknown
	if err := d.callLocked(ctx, op, func(ctx context.Context) error {
		var err error
		state, err = d.powerState(ctx)
		return err
	}); err != nil {
		return err
	}
	step, err := powerplan.Plan(state, action)
	if err != nil {
		return &bmc.OpError{Op: op, Endpoint: d.opts.Endpoint, Err: bmc.Permanent(err)}
	}
	if step == powerplan.StepNone {
		return nil
	}
	return d.callLocked(ctx, op, func(ctx context.Context) error {
		ok, err := d.p.PowerSet(ctx, bmclibAction[step])
		if err := okErr(fmt.Sprintf("bmclib PowerSet(%q) on a server that is %s", bmclibAction[step], state), ok, err); err != nil {
			return err
		}
		return nil
	})
}

// bmclibDevice is bmclib's (ipmitool's) name for each boot device.
var bmclibDevice = map[bmc.BootDevice]string{
	bmc.BootDeviceNone:  "none",
	bmc.BootDevicePXE:   "pxe",
	bmc.BootDeviceDisk:  "disk",
	bmc.BootDeviceCDROM: "cdrom",
	bmc.BootDeviceBIOS:  "bios",
}

// SetBootOverride implements [bmc.BootOverrideSetter] with the provider's
// BootDeviceSet. bmclib has no "leave the mode alone": BootModeUnchanged
// and BootModeLegacy both send efiBoot false. BootDeviceUEFIHTTP is not
// supported.
func (d *Driver) SetBootOverride(ctx context.Context, o bmc.BootOverride) error {
	op := "set boot override " + string(o.Device)
	fail := func(err error) error { return &bmc.OpError{Op: op, Endpoint: d.opts.Endpoint, Err: err} }
	dev, ok := bmclibDevice[o.Device]
	switch {
	case o.Device == bmc.BootDeviceUEFIHTTP:
		return fail(fmt.Errorf("boot device %q has no bmclib equivalent: %w", o.Device, bmc.ErrNotSupported))
	case !ok:
		return fail(bmc.Permanent(fmt.Errorf("invalid boot device %q: want none, pxe, disk, cdrom or bios", o.Device)))
	case o.URI != "":
		return fail(bmc.Permanent(fmt.Errorf("boot device %q with a URI: only %q boots from a URI", o.Device, bmc.BootDeviceUEFIHTTP)))
	case o.Mode != bmc.BootModeUnchanged && o.Mode != bmc.BootModeUEFI && o.Mode != bmc.BootModeLegacy:
		return fail(bmc.Permanent(fmt.Errorf("invalid boot mode %q: want uefi, legacy or empty (unchanged)", o.Mode)))
	}
	s, ok := d.p.(bootDeviceSetter)
	if !ok {
		return fail(fmt.Errorf("provider %T has no BootDeviceSet: %w", d.p, bmc.ErrNotSupported))
	}
	return d.call(ctx, op, func(ctx context.Context) error {
		ok, err := s.BootDeviceSet(ctx, dev, o.Persistent, o.Mode == bmc.BootModeUEFI)
		return okErr(fmt.Sprintf("bmclib BootDeviceSet(%q)", dev), ok, err)
	})
}

// ResetBMC implements [bmc.BMCResetter] with the provider's BmcReset.
func (d *Driver) ResetBMC(ctx context.Context, t bmc.BMCResetType) error {
	op := "reset BMC " + string(t)
	if t != bmc.BMCResetWarm && t != bmc.BMCResetCold {
		return &bmc.OpError{Op: op, Endpoint: d.opts.Endpoint, Err: bmc.Permanent(fmt.Errorf("invalid BMC reset type %q: want warm or cold", t))}
	}
	r, ok := d.p.(bmcResetter)
	if !ok {
		return &bmc.OpError{Op: op, Endpoint: d.opts.Endpoint, Err: fmt.Errorf("provider %T has no BmcReset: %w", d.p, bmc.ErrNotSupported)}
	}
	return d.call(ctx, op, func(ctx context.Context) error {
		ok, err := r.BmcReset(ctx, string(t))
		return okErr(fmt.Sprintf("bmclib BmcReset(%q)", t), ok, err)
	})
}

// Close implements [bmc.Driver]: it calls the provider's Close, if any.
// Idempotent.
func (d *Driver) Close(ctx context.Context) error {
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return &bmc.OpError{Op: "close", Endpoint: d.opts.Endpoint, Err: fmt.Errorf("waiting for the connection: %w", ctx.Err())}
	}
	defer func() { <-d.sem }()
	if d.closed {
		return nil
	}
	d.closed = true
	if c, ok := d.p.(closer); ok {
		return d.callLocked(context.WithoutCancel(ctx), "close", func(ctx context.Context) error { return c.Close(ctx) })
	}
	return nil
}
