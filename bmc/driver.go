package bmc

import (
	"context"
	"time"
)

// Driver is an open connection (session) to one BMC and the system it manages.
//
// A Driver is obtained from a [Dialer] and must be closed with Close. Methods
// must be safe for concurrent use (drivers serialize where the protocol needs
// it) and must honour ctx: return promptly with ctx.Err() (wrapped) once it is
// done. Errors are wrapped in [*OpError]; use [IsTransient] to decide whether
// to retry.
type Driver interface {
	// PowerState reads the current power state. It is one request where the
	// protocol allows.
	PowerState(ctx context.Context) (PowerState, error)

	// SetPower requests a power change with the semantics documented on
	// [PowerAction]. It returns once the BMC accepted the request; the change
	// may land later, so callers verify by polling PowerState. Idempotent:
	// requesting the state the server is already in succeeds without a
	// request that could fail.
	SetPower(ctx context.Context, action PowerAction) error

	// Close ends the session (logs out) and releases connections. Idempotent.
	Close(ctx context.Context) error
}

// BootOverrideSetter is implemented by drivers that can set the boot device.
type BootOverrideSetter interface {
	// SetBootOverride sets the boot device for the next boot (or every boot
	// when Persistent). Idempotent.
	SetBootOverride(ctx context.Context, o BootOverride) error
}

// BootOverrideGetter is implemented by drivers that can read the boot
// override back. Drivers whose BMC cannot report it do not implement it (or
// return [ErrNotSupported]).
type BootOverrideGetter interface {
	BootOverride(ctx context.Context) (BootOverride, error)
}

// VirtualMedia is implemented by drivers that can attach virtual media.
type VirtualMedia interface {
	// InsertMedia attaches the image at imageURL to the device of the given
	// kind, ejecting whatever was inserted first. Idempotent.
	InsertMedia(ctx context.Context, kind MediaKind, imageURL string) error
	// EjectMedia detaches the device's media. Ejecting an empty device succeeds.
	EjectMedia(ctx context.Context, kind MediaKind) error
	// MediaStatus reads the device back.
	MediaStatus(ctx context.Context, kind MediaKind) (MediaStatus, error)
}

// BMCResetType selects a reset of the BMC itself.
type BMCResetType string

// BMC reset types.
const (
	BMCResetWarm BMCResetType = "warm"
	BMCResetCold BMCResetType = "cold"
)

// BMCResetter is implemented by drivers that can reset the BMC itself.
type BMCResetter interface {
	ResetBMC(ctx context.Context, t BMCResetType) error
}

// LastResetReader is implemented by drivers that can read when the system
// last came out of a reset or booted, as the BMC reports it (Redfish
// ComputerSystem.LastResetTime). A power cycle or reset cannot be seen in the
// power state (the server is On before and after); a change of this time is
// the evidence that one landed. The time is the BMC's: compare it only with
// what the same BMC reported before, never with the caller's clock. A BMC
// that does not report it returns an error wrapping [ErrNotSupported]
// ([CapabilityLastResetTime]). Safe for concurrent use; it changes nothing.
type LastResetReader interface {
	LastResetTime(ctx context.Context) (time.Time, error)
}

// SystemOpener is implemented by drivers whose session can serve every
// system behind their endpoint (a chassis manager, a blade enclosure, a
// multi-node Redfish service, an emulator serving many VMs), so jobs on those
// systems share one login instead of one each.
type SystemOpener interface {
	// OpenSystem returns a Driver for the system that ep names, sharing this
	// driver's session and connections. ep must have the same protocol,
	// transport, host and port as the endpoint this driver was dialed for;
	// otherwise OpenSystem fails with an error wrapping ErrNotSupported.
	// The returned driver's Close releases only its own state, never the
	// shared session; closing the driver that owns the session ends the
	// session for every system opened from it, after which their calls fail.
	// Safe for concurrent use.
	OpenSystem(ctx context.Context, ep Endpoint) (Driver, error)
}

// StatsReporter is implemented by drivers that count their wire traffic.
type StatsReporter interface {
	// Stats reports what this driver's calls cost so far (totals, never
	// decreasing). Drivers that share a session ([SystemOpener]) each
	// report their own calls' share, the driver that owns the session also
	// its login and logout, so that the Stats of a session's drivers add up
	// to its traffic. Safe for concurrent use.
	Stats() Stats
}

// Dialer opens a Driver for an endpoint with the given credentials. It must be
// safe for concurrent use.
type Dialer interface {
	Dial(ctx context.Context, ep Endpoint, creds Credentials) (Driver, error)
}

// DialerFunc adapts a function to a [Dialer].
type DialerFunc func(ctx context.Context, ep Endpoint, creds Credentials) (Driver, error)

// Dial calls f.
func (f DialerFunc) Dial(ctx context.Context, ep Endpoint, creds Credentials) (Driver, error) {
	return f(ctx, ep, creds)
}
