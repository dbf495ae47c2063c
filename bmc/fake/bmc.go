package fake

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// ErrClosed is returned (wrapped) by calls on a [Driver] after its Close.
var ErrClosed = errors.New("fake: session is closed")

// ErrUnreachable is returned (wrapped, and marked transient) by calls made
// while the BMC restarts after a ResetBMC; see [Options.BMCResetDowntime].
var ErrUnreachable = errors.New("fake: BMC unreachable (restarting)")

// ErrSessionExpired is returned (wrapped, and marked transient) by calls on a
// session that [BMC.ExpireSessions] ended; dial again to continue.
var ErrSessionExpired = fmt.Errorf("fake: %w", bmc.ErrSessionExpired)

// BMC is the server-side state of one simulated BMC and the server it
// manages: power (with delayed, typed transitions), boot override, virtual
// media per kind, the credentials it accepts, its sessions, fault hooks and a
// log of every call. Drivers reach it through [BMC.Dial] or a [Fleet].
//
// All methods are safe for concurrent use.
type BMC struct {
	opts      Options
	clock     Clock
	wallClock bool // clock is realClock: latency waits on a pooled timer
	lacks     map[Capability]bool

	mu        sync.Mutex
	power     bmc.PowerState // last landed state, On or Off
	steps     []step         // pending transition, in order
	override  bmc.BootOverride
	media     map[bmc.MediaKind]bmc.MediaStatus
	boots     int
	lastReset time.Time // when the server last booted (LastResetTime)
	lastBoot  bmc.BootDevice
	resets    int
	downUntil time.Time // calls fail until then (the BMC restarts)
	hooks     map[Method]Hook
	failNext  map[Method]*failure
	calls     []Call // the call log: a ring of up to CallLogSize entries
	callsHead int    // index of the oldest entry once the ring is full
	sessions  SessionStats
	expiries  int // ExpireSessions calls; a session is live while its epoch matches
	nextConn  int
	fw        firmware         // firmware.go
	inventory bmc.Inventory    // Options.Inventory (never modified)
	bios      biosState        // bios.go
	health    bmc.HealthReport // health.go
	logs      []Log            // eventlog.go
	events    eventService     // events.go
	led       bmc.LEDState     // locatorled.go
	nmis      int              // nmi.go
	accounts  accountStore     // accounts.go

	secureBoot secureBootState // secureboot.go
	bootOrder  bootOrderState  // bootorder.go
}

// step is one leg of a pending power transition: the BMC reports during
// until end, then lands on after.
type step struct {
	during bmc.PowerState
	end    time.Time
	after  bmc.PowerState
	hard   bool // a hard off (not a soft-off), for idempotence
}

type failure struct {
	n   int
	err error
}

// SessionStats counts the sessions opened on a [BMC].
type SessionStats struct {
	// Logins is the number of successful Dials.
	Logins int
	// FailedLogins is the number of Dials refused (bad credentials, hooks,
	// cancelled ctx).
	FailedLogins int
	// Open is the number of sessions dialled and not yet closed.
	Open int
	// MaxOpen is the largest Open has ever been: 1 means no two sessions
	// were ever open on this BMC at once.
	MaxOpen int
}

// State is a snapshot of a [BMC], for assertions.
type State struct {
	// Power is what PowerState reports now, transitional states included.
	Power bmc.PowerState
	// PendingPower is where a pending transition lands, or "" when none is
	// pending.
	PendingPower bmc.PowerState
	// BootOverride is the current override; a one-time override is consumed
	// (reset to bmc.BootDeviceNone) by the next boot.
	BootOverride bmc.BootOverride
	// Media holds the status of each virtual media device the BMC has.
	Media map[bmc.MediaKind]bmc.MediaStatus
	// Boots counts how often the server booted (landed On from Off, or was
	// reset).
	Boots int
	// LastResetTime is when the server last booted (on the BMC's clock), or
	// when the BMC was created if it never did: what
	// [Driver.LastResetTime] reports.
	LastResetTime time.Time
	// LastBootDevice is the device the last boot used: the override's device,
	// or bmc.BootDeviceDisk without one. Empty before the first boot.
	LastBootDevice bmc.BootDevice
	// BMCResets counts ResetBMC calls that succeeded.
	BMCResets int
	// LocatorLED is the locator LED's state (bmc.LEDOff at first).
	LocatorLED bmc.LEDState
	// NMIs counts SendNMI calls that succeeded.
	NMIs int
}

// New returns a BMC configured by opts. It panics with a message naming the
// field when opts is invalid (an unknown capability or method, a negative
// duration, an initial power state other than On or Off): a test double's
// misconfiguration is a bug in the test.
func New(opts Options) *BMC {
	if err := opts.validate(); err != nil {
		panic(err.Error())
	}
	if opts.Power == "" {
		opts.Power = bmc.PowerOff
	}
	if opts.CallLogSize == 0 {
		opts.CallLogSize = 10000
	}
	if opts.SoftOffDelay == 0 {
		opts.SoftOffDelay = opts.PowerTransition
	}
	b := &BMC{
		opts:     opts,
		clock:    opts.Clock,
		lacks:    map[Capability]bool{},
		power:    opts.Power,
		override: bmc.BootOverride{Device: bmc.BootDeviceNone},
		led:      bmc.LEDOff,
		media:    map[bmc.MediaKind]bmc.MediaStatus{},
		hooks:    map[Method]Hook{},
		failNext: map[Method]*failure{},
	}
	if b.clock == nil {
		b.clock = realClock{}
	}
	_, b.wallClock = b.clock.(realClock)
	b.lastReset = b.clock.Now() // as if the server came up with its BMC
	b.initFirmware()
	b.inventory, b.bios = DefaultInventory(), newBIOS(opts)
	b.secureBoot, b.bootOrder = newSecureBoot(opts), newBootOrder(opts)
	if opts.Inventory != nil {
		b.inventory = *opts.Inventory.DeepCopy()
	}
	b.health, b.logs = DefaultHealth(), DefaultLogs()
	if opts.Health != nil {
		b.health = copyHealth(*opts.Health)
	}
	if opts.Logs != nil {
		b.logs = copyLogs(opts.Logs)
	}
	for _, c := range opts.Unsupported {
		b.lacks[c] = true
	}
	b.initAccounts()
	for m, h := range opts.Hooks {
		b.hooks[m] = h
	}
	for _, k := range []bmc.MediaKind{bmc.MediaCD, bmc.MediaUSB} {
		if b.hasMedia(k) {
			b.media[k] = bmc.MediaStatus{}
		}
	}
	return b
}

func (b *BMC) hasMedia(k bmc.MediaKind) bool {
	switch k {
	case bmc.MediaCD:
		return !b.lacks[bmc.CapabilityVirtualMediaCD]
	case bmc.MediaUSB:
		return !b.lacks[bmc.CapabilityVirtualMediaUSB]
	}
	return false
}

// SetHook installs h for method m, replacing the previous hook; a nil h
// removes it. A hook for [MethodAny] runs on every call, after the method's
// own hook.
func (b *BMC) SetHook(m Method, h Hook) {
	if !m.valid() {
		panic(fmt.Sprintf("fake: SetHook: unknown method %q", m))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if h == nil {
		delete(b.hooks, m)
		return
	}
	b.hooks[m] = h
}

// FailNext makes the next n calls of method m ([MethodAny] for any method)
// fail with err, before any hook runs. Wrap err with [bmc.Transient] to make
// it worth retrying. A later FailNext for the same method replaces it.
func (b *BMC) FailNext(m Method, n int, err error) {
	if !m.valid() {
		panic(fmt.Sprintf("fake: FailNext: unknown method %q", m))
	}
	if err == nil {
		panic("fake: FailNext: nil error")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n <= 0 {
		delete(b.failNext, m)
		return
	}
	b.failNext[m] = &failure{n: n, err: err}
}

// Calls returns a copy of the call log, oldest first.
func (b *BMC) Calls() []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	older, newer := b.logged()
	if len(older)+len(newer) == 0 {
		return nil
	}
	out := make([]Call, 0, len(older)+len(newer))
	return append(append(out, older...), newer...)
}

// logged is the call log, oldest first, in two parts; called with b.mu
// held.
func (b *BMC) logged() (older, newer []Call) {
	return b.calls[b.callsHead:], b.calls[:b.callsHead]
}

// logCall adds c to the call log; called with b.mu held. The log is a ring
// that grows (doubling, from a few entries) up to CallLogSize, then
// overwrites its oldest entry: no allocation once it is full.
func (b *BMC) logCall(c Call) {
	n := b.opts.CallLogSize
	if n < 0 {
		return
	}
	if len(b.calls) < n {
		if len(b.calls) == cap(b.calls) {
			grown := make([]Call, len(b.calls), min(n, max(2*cap(b.calls), 16)))
			copy(grown, b.calls)
			b.calls = grown
		}
		b.calls = append(b.calls, c)
		return
	}
	b.calls[b.callsHead] = c
	if b.callsHead++; b.callsHead == n {
		b.callsHead = 0
	}
}

// CallsTo returns the logged calls of method m, oldest first.
func (b *BMC) CallsTo(m Method) []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Call
	older, newer := b.logged()
	for _, part := range [2][]Call{older, newer} {
		for _, c := range part {
			if c.Method == m || m == MethodAny {
				out = append(out, c)
			}
		}
	}
	return out
}

// ResetCalls empties the call log.
func (b *BMC) ResetCalls() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls, b.callsHead = nil, 0
}

// Sessions returns the session counters.
func (b *BMC) Sessions() SessionStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sessions
}

// ExpireSessions ends every open session, as a BMC whose sessions time out:
// further calls on them fail with an error wrapping [ErrSessionExpired],
// marked transient. Closing them still succeeds.
func (b *BMC) ExpireSessions() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expiries++
}

// State returns a snapshot of the BMC's state, landing any transition that
// is due on the clock.
func (b *BMC) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settle()
	s := State{
		Power:          b.visible(),
		BootOverride:   b.override,
		Media:          make(map[bmc.MediaKind]bmc.MediaStatus, len(b.media)),
		Boots:          b.boots,
		LastResetTime:  b.lastReset,
		LastBootDevice: b.lastBoot,
		BMCResets:      b.resets,
		LocatorLED:     b.led,
		NMIs:           b.nmis,
	}
	if n := len(b.steps); n > 0 {
		s.PendingPower = b.steps[n-1].after
	}
	for k, v := range b.media {
		s.Media[k] = v
	}
	return s
}

// SetPower sets the power state directly (bmc.PowerOn or bmc.PowerOff),
// dropping any pending transition. It is a test hook: it counts no boot and
// logs no call.
func (b *BMC) SetPower(s bmc.PowerState) {
	if s != bmc.PowerOn && s != bmc.PowerOff {
		panic(fmt.Sprintf("fake: SetPower(%q): want %q or %q", s, bmc.PowerOn, bmc.PowerOff))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.steps = nil
	b.power = s
}

// SetBootOverride sets the boot override directly (a test hook; logs no
// call).
func (b *BMC) SetBootOverride(o bmc.BootOverride) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.override = o
}

// SetMedia sets a virtual media device's status directly (a test hook; logs
// no call). It panics if the BMC lacks that device.
func (b *BMC) SetMedia(kind bmc.MediaKind, s bmc.MediaStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.media[kind]; !ok {
		panic(fmt.Sprintf("fake: SetMedia: this BMC has no %q device", kind))
	}
	b.media[kind] = s
}

// Dial opens a session on this BMC as a [bmc.Dialer] that ignores the
// endpoint's address (ep only names the BMC in errors). It checks the
// credentials (an error wrapping [bmc.ErrUnauthorized] when they are wrong)
// and counts a login. Use a [Fleet] to serve several BMCs by address.
func (b *BMC) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	return b.dial(ctx, ep, nil, creds)
}

var _ bmc.Dialer = (*BMC)(nil)

func (b *BMC) dial(ctx context.Context, ep bmc.Endpoint, fleet *Fleet, creds bmc.Credentials) (*Driver, error) {
	b.mu.Lock()
	b.nextConn++
	id := b.nextConn
	b.mu.Unlock()
	// The driver and its session in one allocation.
	ds := &struct {
		d Driver
		s session
	}{d: Driver{bmc: b, ep: ep, fleet: fleet, owner: true}, s: session{bmc: b, id: id}}
	d := &ds.d
	d.sess = &ds.s
	err := d.do(ctx, MethodDial, []any{creds.Username}, func() error {
		if m := b.opts.MaxSessions; m > 0 && b.sessions.Open >= m {
			return bmc.Transient(fmt.Errorf("session limit reached: %d of %d sessions open", b.sessions.Open, m))
		}
		if err := b.login(creds); err != nil { // accounts.go
			return err
		}
		// Counted under the same lock as the limit check above.
		b.sessions.Logins++
		b.sessions.Open++
		b.sessions.MaxOpen = max(b.sessions.MaxOpen, b.sessions.Open)
		d.sess.open, d.sess.epoch = true, b.expiries
		return nil
	})
	if err != nil {
		b.mu.Lock()
		b.sessions.FailedLogins++
		b.mu.Unlock()
		return nil, err
	}
	return d, nil
}
