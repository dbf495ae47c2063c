package fake

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Driver is one session on a [BMC], returned by [BMC.Dial] and [Fleet.Dial],
// or a system opened on another driver's session with [Driver.OpenSystem].
// It implements [bmc.Driver] and every optional capability interface; the
// capabilities the BMC was told to lack return an error wrapping
// [bmc.ErrNotSupported]. Every error is a [*bmc.OpError]. Safe for
// concurrent use.
type Driver struct {
	bmc   *BMC // the system this driver acts on
	ep    bmc.Endpoint
	fleet *Fleet // the fleet it was dialed through, or nil
	sess  *session
	owner bool // Close ends the session
	// requests counts this driver's calls (Stats).
	requests atomic.Int64

	closeOnce sync.Once
	closed    atomic.Bool
}

// session is one login: on the BMC that was dialed, shared by the Driver
// Dial returned and every Driver opened from it.
type session struct {
	bmc *BMC // the BMC that holds the login
	id  int

	// Guarded by bmc.mu: the session is live (logged in, not closed, not
	// expired) while open is set and epoch is bmc.expiries.
	open  bool
	epoch int
}

// live reports whether s is open and unexpired; called with s.bmc.mu held.
func (s *session) live() bool { return s.open && s.epoch == s.bmc.expiries }

var (
	_ bmc.Driver             = (*Driver)(nil)
	_ bmc.BootOverrideSetter = (*Driver)(nil)
	_ bmc.BootOverrideGetter = (*Driver)(nil)
	_ bmc.VirtualMedia       = (*Driver)(nil)
	_ bmc.BMCResetter        = (*Driver)(nil)
	_ bmc.StatsReporter      = (*Driver)(nil)
	_ bmc.SystemOpener       = (*Driver)(nil)
	_ bmc.LastResetReader    = (*Driver)(nil)
	_ bmc.FirmwareUpdater    = (*Driver)(nil)
)

// BMC returns the fake this session is on.
func (d *Driver) BMC() *BMC { return d.bmc }

// Session is the session's number on the BMC that was dialed (1 for its
// first Dial), as recorded in [Call.Session]. A driver from
// [Driver.OpenSystem] shares the number of the driver it was opened from.
func (d *Driver) Session() int { return d.sess.id }

// do runs one call: ctx check, session check, latency, failures and hooks,
// then op under the BMC's lock; it logs the call and wraps the error.
func (d *Driver) do(ctx context.Context, m Method, args []any, op func() error) error {
	b := d.bmc
	call := Call{Method: m, Args: args, Session: d.sess.id, Time: b.clock.Now()}
	d.requests.Add(1)
	return d.finish(call, d.run(ctx, call), op)
}

// finish runs op unless err already fails the call, then wraps the error
// and logs the call, under one lock: a call is logged as soon as its effect
// is visible.
func (d *Driver) finish(call Call, err error, op func() error) error {
	b := d.bmc
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		err = op()
	}
	if err != nil {
		err = &bmc.OpError{Op: opName(call.Method), Endpoint: d.ep.String(), Err: err}
	}
	call.Err = err
	b.logCall(call)
	return err
}

func opName(m Method) string {
	switch m {
	case MethodDial:
		return "dial"
	case MethodClose:
		return "close"
	case MethodPowerState:
		return "power state"
	case MethodSetPower:
		return "set power"
	case MethodSetBootOverride:
		return "set boot override"
	case MethodBootOverride:
		return "boot override"
	case MethodInsertMedia:
		return "insert media"
	case MethodEjectMedia:
		return "eject media"
	case MethodMediaStatus:
		return "media status"
	case MethodResetBMC:
		return "reset BMC"
	case MethodOpenSystem:
		return "open system"
	case MethodLastResetTime:
		return "last reset time"
	case MethodStartFirmwareUpdate:
		return "start firmware update"
	case MethodFindFirmwareUpdate:
		return "find firmware update"
	case MethodFirmwareUpdateStatus:
		return "read firmware update task"
	case MethodFirmwareVersion:
		return "read firmware version"
	case MethodInventory:
		return "inventory"
	case MethodBIOSSettings:
		return "read BIOS settings"
	case MethodBIOSRegistry:
		return "read BIOS attribute registry"
	case MethodSetBIOSAttributes:
		return "set BIOS attributes"
	case MethodCheckNeed:
		return "check need"
	case MethodHealth:
		return "read health"
	case MethodSystemStatus:
		return "read system status"
	case MethodLogServices:
		return "list event logs"
	case MethodLogEntries:
		return "read event log"
	case MethodClearLog:
		return "clear event log"
	case MethodEventSubscriptions:
		return "list event subscriptions"
	case MethodSubscribe:
		return "subscribe to events"
	case MethodUnsubscribe:
		return "unsubscribe from events"
	case MethodSubmitTestEvent:
		return "submit test event"
	case MethodLocatorLED:
		return "read locator LED"
	case MethodSetLocatorLED:
		return "set locator LED"
	case MethodSendNMI:
		return "send NMI"
	case MethodAccounts:
		return "list accounts"
	case MethodPasswordPolicy:
		return "read password policy"
	case MethodCreateAccount:
		return "create account"
	case MethodUpdateAccount:
		return "update account"
	case MethodDeleteAccount:
		return "delete account"
	}
	return string(m)
}

// run does everything before op: it returns the error that fails the
// call, or nil when op is to run.
func (d *Driver) run(ctx context.Context, call Call) error {
	b := d.bmc
	if err := ctx.Err(); err != nil {
		return err
	}
	if call.Method != MethodClose {
		if call.Method != MethodDial && d.closed.Load() {
			return ErrClosed
		}
		// One lock when the session is on this BMC (always, except for a
		// driver from OpenSystem on another system of a Fleet).
		sb := d.sess.bmc
		live := true
		b.mu.Lock()
		down := !b.downUntil.IsZero() && b.clock.Now().Before(b.downUntil)
		if sb == b && call.Method != MethodDial {
			live = d.sess.live()
		}
		b.mu.Unlock()
		if sb != b && call.Method != MethodDial && !down {
			sb.mu.Lock()
			live = d.sess.live()
			sb.mu.Unlock()
		}
		switch {
		case down:
			return bmc.Transient(ErrUnreachable)
		case !live:
			return bmc.Transient(ErrSessionExpired)
		}
	}
	if lat := b.opts.Latency; lat > 0 {
		if err := b.wait(ctx, lat); err != nil {
			return err
		}
	}
	var failErr error
	var hooks [2]Hook
	b.mu.Lock()
	if len(b.failNext) > 0 {
		for _, key := range [2]Method{call.Method, MethodAny} {
			if f := b.failNext[key]; f != nil && failErr == nil {
				failErr = f.err
				if f.n--; f.n <= 0 {
					delete(b.failNext, key)
				}
			}
		}
	}
	if len(b.hooks) > 0 {
		hooks = [2]Hook{b.hooks[call.Method], b.hooks[MethodAny]}
	}
	b.mu.Unlock()
	if failErr != nil {
		return failErr
	}
	for _, h := range hooks {
		if h == nil {
			continue
		}
		if err := h(ctx, call); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if call.Method == MethodClose {
		return nil // a fenced close still frees the fake's session
	}
	// The fence last, right before the call takes effect (bmc.Admit).
	return bmc.Admit(ctx)
}

// wait waits out the latency lat on the BMC's clock, or until ctx ends.
func (b *BMC) wait(ctx context.Context, lat time.Duration) error {
	if !b.wallClock {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.clock.After(lat):
			return nil
		}
	}
	done := ctx.Done()
	if done == nil {
		time.Sleep(lat) // a ctx that never ends: no timer or channel to allocate
		return nil
	}
	// A pooled timer instead of time.After's new one per call. Since Go 1.23
	// a stopped or reset timer delivers no stale tick.
	t, _ := timers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(lat)
	} else {
		t.Reset(lat)
	}
	select {
	case <-done:
		t.Stop()
		timers.Put(t)
		return ctx.Err()
	case <-t.C:
		timers.Put(t)
		return nil
	}
}

// timers holds stopped or fired *time.Timer for BMC.wait on the wall clock.
var timers sync.Pool

// Close ends the session. The session counts as closed at once, whatever
// the ctx, latency or hooks say; the call is still logged and may return an
// error from them. Idempotent: later calls return nil. On a driver from
// [Driver.OpenSystem] it closes only that driver; on the driver that was
// dialed it ends the session for every driver opened from it too (their
// calls then fail with an error wrapping [ErrSessionExpired]).
func (d *Driver) Close(ctx context.Context) error {
	first := false
	d.closeOnce.Do(func() {
		first = true
		d.closed.Store(true)
		if !d.owner {
			return
		}
		sb := d.sess.bmc
		sb.mu.Lock()
		sb.sessions.Open--
		d.sess.open = false
		sb.mu.Unlock()
	})
	if !first {
		return nil
	}
	return d.do(ctx, MethodClose, nil, func() error { return nil })
}

// Stats implements [bmc.StatsReporter]: every call on this driver counts as
// one request; the driver that was dialed also counts the session's one
// connection and one login. Drivers sharing a session ([Driver.OpenSystem])
// each count their own calls, so their Stats add up to the session's.
func (d *Driver) Stats() bmc.Stats {
	if !d.owner {
		return bmc.Stats{Requests: d.requests.Load()}
	}
	return bmc.Stats{Requests: d.requests.Load(), Connections: 1, Logins: 1}
}

// OpenSystem implements [bmc.SystemOpener]: it returns a Driver for the
// system ep names that shares this driver's session, without a login. The
// system is the fake registered at ep in the [Fleet] this driver was dialed
// through (found as [Fleet.Dial] finds it); a driver dialed from a single
// [BMC] serves only its own system. ep must have this driver's protocol,
// transport, host and effective port, otherwise the error wraps
// [bmc.ErrNotSupported]. The call is logged as [MethodOpenSystem] on the
// opened system's BMC, where hooks and [BMC.FailNext] can fail it; it counts
// no login on that BMC ([BMC.Sessions] and [Fleet.Logins] are unchanged).
func (d *Driver) OpenSystem(ctx context.Context, ep bmc.Endpoint) (bmc.Driver, error) {
	fail := func(err error) error {
		return &bmc.OpError{Op: opName(MethodOpenSystem), Endpoint: ep.String(), Err: err}
	}
	if !sameService(d.ep, ep) {
		return nil, fail(fmt.Errorf("fake: the session is on %s (%s), not on %s (%s): %w",
			d.ep.HostPort(), transportOf(d.ep), ep.HostPort(), transportOf(ep), bmc.ErrNotSupported))
	}
	if d.closed.Load() {
		return nil, fail(ErrClosed)
	}
	target := d.bmc
	switch {
	case d.fleet != nil:
		var err error
		if target, err = d.fleet.find(ep); err != nil {
			return nil, fail(err)
		}
	case fleetKey(ep) != fleetKey(d.ep):
		return nil, fail(fmt.Errorf("fake: a driver dialed from a single BMC serves only %s; dial through a Fleet to open other systems: %w", d.ep, bmc.ErrNotSupported))
	}
	nd := &Driver{bmc: target, ep: ep, fleet: d.fleet, sess: d.sess}
	if err := nd.do(ctx, MethodOpenSystem, []any{ep.String()}, func() error { return nil }); err != nil {
		return nil, err
	}
	return nd, nil
}

// sameService reports whether a and b reach the same service: protocol,
// transport, host and effective port.
func sameService(a, b bmc.Endpoint) bool {
	return a.Protocol == b.Protocol && transportOf(a) == transportOf(b) && a.Key() == b.Key()
}

func transportOf(ep bmc.Endpoint) string {
	if ep.Protocol == "redfish" && ep.Transport == "" {
		return "https"
	}
	return ep.Transport
}

// PowerState implements [bmc.Driver].
func (d *Driver) PowerState(ctx context.Context) (bmc.PowerState, error) {
	var s bmc.PowerState
	err := d.do(ctx, MethodPowerState, nil, func() error {
		d.bmc.settle()
		s = d.bmc.visible()
		return nil
	})
	if err != nil {
		return bmc.PowerUnknown, err
	}
	return s, nil
}

// SetPower implements [bmc.Driver] with the semantics of [bmc.PowerAction].
func (d *Driver) SetPower(ctx context.Context, action bmc.PowerAction) error {
	return d.do(ctx, MethodSetPower, []any{boxAction(action)}, func() error { return d.bmc.setPower(action) })
}

// boxAction returns a as an interface value without allocating for the
// defined actions (a constant converts to an interface statically).
func boxAction(a bmc.PowerAction) any {
	switch a {
	case bmc.PowerActionOn:
		return bmc.PowerActionOn
	case bmc.PowerActionOff:
		return bmc.PowerActionOff
	case bmc.PowerActionSoftOff:
		return bmc.PowerActionSoftOff
	case bmc.PowerActionCycle:
		return bmc.PowerActionCycle
	case bmc.PowerActionReset:
		return bmc.PowerActionReset
	}
	return a
}

// SetBootOverride implements [bmc.BootOverrideSetter]. It supports
// bmc.BootDeviceUEFIHTTP with a URI (read back by BootOverride) unless the
// BMC lacks bmc.CapabilityBootHTTP; a URI with another device, and UEFI
// HTTP boot in legacy mode, are permanent errors.
func (d *Driver) SetBootOverride(ctx context.Context, o bmc.BootOverride) error {
	return d.do(ctx, MethodSetBootOverride, []any{o}, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityBootOverride] {
			return fmt.Errorf("boot override: %w", bmc.ErrNotSupported)
		}
		switch o.Device {
		case bmc.BootDeviceNone, bmc.BootDevicePXE, bmc.BootDeviceDisk, bmc.BootDeviceCDROM, bmc.BootDeviceBIOS:
			if o.URI != "" {
				return bmc.Permanent(fmt.Errorf("boot device %q with URI %q: only %q boots from a URI", o.Device, o.URI, bmc.BootDeviceUEFIHTTP))
			}
		case bmc.BootDeviceUEFIHTTP:
			if b.lacks[bmc.CapabilityBootHTTP] {
				return fmt.Errorf("UEFI HTTP boot: %w", bmc.ErrNotSupported)
			}
			if o.Mode == bmc.BootModeLegacy {
				return bmc.Permanent(fmt.Errorf("UEFI HTTP boot in legacy mode: want mode uefi or unchanged"))
			}
		default:
			return bmc.Permanent(fmt.Errorf("invalid boot device %q", o.Device))
		}
		switch o.Mode {
		case bmc.BootModeUnchanged:
		case bmc.BootModeUEFI, bmc.BootModeLegacy:
			if b.lacks[bmc.CapabilityBootMode] {
				return fmt.Errorf("boot mode %q: %w", o.Mode, bmc.ErrNotSupported)
			}
		default:
			return bmc.Permanent(fmt.Errorf("invalid boot mode %q", o.Mode))
		}
		mode := o.Mode
		if mode == bmc.BootModeUnchanged {
			mode = b.override.Mode
		}
		if !o.Persistent && b.opts.IgnoreOnceOverride {
			b.override = bmc.BootOverride{Device: bmc.BootDeviceNone, Mode: mode}
			return nil // accepted and dropped, as some BMCs do
		}
		b.override = bmc.BootOverride{Device: o.Device, Persistent: o.Persistent, Mode: mode, URI: o.URI}
		return nil
	})
}

// BootOverride implements [bmc.BootOverrideGetter].
func (d *Driver) BootOverride(ctx context.Context) (bmc.BootOverride, error) {
	var o bmc.BootOverride
	err := d.do(ctx, MethodBootOverride, nil, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityBootOverride] || b.lacks[bmc.CapabilityBootOverrideReadBack] {
			return fmt.Errorf("reading the boot override: %w", bmc.ErrNotSupported)
		}
		b.settle()
		o = b.override
		return nil
	})
	return o, err
}

// InsertMedia implements [bmc.VirtualMedia].
func (d *Driver) InsertMedia(ctx context.Context, kind bmc.MediaKind, imageURL string) error {
	return d.do(ctx, MethodInsertMedia, []any{kind, imageURL}, func() error {
		if err := d.bmc.checkMedia(kind); err != nil {
			return err
		}
		if imageURL == "" {
			return bmc.Permanent(fmt.Errorf("empty image URL for %s media", kind))
		}
		d.bmc.media[kind] = bmc.MediaStatus{Inserted: true, Image: imageURL}
		return nil
	})
}

// EjectMedia implements [bmc.VirtualMedia].
func (d *Driver) EjectMedia(ctx context.Context, kind bmc.MediaKind) error {
	return d.do(ctx, MethodEjectMedia, []any{kind}, func() error {
		if err := d.bmc.checkMedia(kind); err != nil {
			return err
		}
		d.bmc.media[kind] = bmc.MediaStatus{}
		return nil
	})
}

// MediaStatus implements [bmc.VirtualMedia].
func (d *Driver) MediaStatus(ctx context.Context, kind bmc.MediaKind) (bmc.MediaStatus, error) {
	var s bmc.MediaStatus
	err := d.do(ctx, MethodMediaStatus, []any{kind}, func() error {
		if err := d.bmc.checkMedia(kind); err != nil {
			return err
		}
		s = d.bmc.media[kind]
		return nil
	})
	return s, err
}

// ResetBMC implements [bmc.BMCResetter]. It counts the reset in
// [State.BMCResets] and makes the BMC unreachable for
// [Options.BMCResetDowntime]; the server's power and the sessions are
// unaffected.
func (d *Driver) ResetBMC(ctx context.Context, t bmc.BMCResetType) error {
	return d.do(ctx, MethodResetBMC, []any{t}, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityBMCReset] {
			return fmt.Errorf("BMC reset: %w", bmc.ErrNotSupported)
		}
		if t != bmc.BMCResetWarm && t != bmc.BMCResetCold {
			return bmc.Permanent(fmt.Errorf("invalid BMC reset type %q: want %q or %q", t, bmc.BMCResetWarm, bmc.BMCResetCold))
		}
		if t == bmc.BMCResetWarm && b.lacks[bmc.CapabilityBMCResetWarm] || t == bmc.BMCResetCold && b.lacks[bmc.CapabilityBMCResetCold] {
			return fmt.Errorf("BMC reset %s: %w", t, bmc.ErrNotSupported)
		}
		b.resets++
		b.activateFirmware(true) // BMC firmware staged for this reset
		if dt := b.opts.BMCResetDowntime; dt > 0 {
			b.downUntil = b.clock.Now().Add(dt)
		}
		return nil
	})
}

// LastResetTime implements [bmc.LastResetReader]: when the server last
// booted (came on from off, was cycled or reset; see [State]), on the BMC's
// clock. Without [bmc.CapabilityLastResetTime] it fails with an error
// wrapping [bmc.ErrNotSupported].
func (d *Driver) LastResetTime(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := d.do(ctx, MethodLastResetTime, nil, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityLastResetTime] {
			return fmt.Errorf("reading the last reset time: %w", bmc.ErrNotSupported)
		}
		b.settle()
		t = b.lastReset
		return nil
	})
	return t, err
}

// checkMedia is called with b.mu held.
func (b *BMC) checkMedia(kind bmc.MediaKind) error {
	switch kind {
	case bmc.MediaCD, bmc.MediaUSB:
	default:
		return bmc.Permanent(fmt.Errorf("invalid media kind %q: want %q or %q", kind, bmc.MediaCD, bmc.MediaUSB))
	}
	if _, ok := b.media[kind]; !ok {
		return fmt.Errorf("virtual media %s: %w", kind, bmc.ErrNotSupported)
	}
	return nil
}
