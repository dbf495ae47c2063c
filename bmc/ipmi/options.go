package ipmi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/budget"
)

// Privilege is the IPMI session privilege level the driver asks for.
type Privilege string

// Privilege levels. Power control and boot options need at least Operator;
// BMC reset needs Administrator on most BMCs.
const (
	PrivilegeAdministrator Privilege = "administrator"
	PrivilegeOperator      Privilege = "operator"
	PrivilegeUser          Privilege = "user"
)

func (p Privilege) level() (types.PrivilegeLevel, error) {
	switch p {
	case "", PrivilegeAdministrator:
		return types.PrivilegeLevelAdministrator, nil
	case PrivilegeOperator:
		return types.PrivilegeLevelOperator, nil
	case PrivilegeUser:
		return types.PrivilegeLevelUser, nil
	}
	return 0, fmt.Errorf("ipmi: invalid Options.Privilege %q: want administrator, operator or user", string(p))
}

// BootReadBack says how much of a boot override [Driver.BootOverride]
// reads back from the BMC.
type BootReadBack string

// Boot read-back levels.
const (
	// BootReadBackFull reports the device, persistence and boot mode.
	BootReadBackFull BootReadBack = "full"
	// BootReadBackDevice reports the device and persistence, and the mode
	// as bmc.BootModeUnchanged (not verified), for BMCs that always report
	// "legacy" whatever was set.
	BootReadBackDevice BootReadBack = "device"
	// BootReadBackNone makes BootOverride fail with bmc.ErrNotSupported,
	// for BMCs that do not report what was set (ipmi_sim).
	BootReadBackNone BootReadBack = "none"
)

// DefaultCipherSuites are tried in order when Options.CipherSuites is empty:
// 17 (HMAC-SHA256, AES-CBC-128), then 3 (HMAC-SHA1, AES-CBC-128).
var DefaultCipherSuites = []int{17, 3}

// Options configure a [Dialer]. The zero value is ready to use.
type Options struct {
	// CipherSuites are the RMCP+ cipher suite IDs tried in order when
	// opening a session; the first the BMC accepts is used (0, which authenticates nothing, is refused). The driver never
	// asks the BMC which suites it supports (some BMCs, OpenIPMI's ipmi_sim
	// among them, ignore that query), so naming one suite uses exactly that
	// suite. Defaults to
	// [DefaultCipherSuites] (17, then 3).
	CipherSuites []int

	// Privilege is the session privilege level requested. Defaults to
	// PrivilegeAdministrator.
	Privilege Privilege

	// Timeout is how long one request waits for the BMC's reply before it
	// is sent again. Defaults to 2s.
	Timeout time.Duration

	// Retries is how many times a request that got no reply is sent again
	// (so a request takes at most (Retries+1)*Timeout). Defaults to 2; set a
	// negative value for no retries.
	Retries int

	// IdleRelogin re-establishes the session before a call when the
	// connection was idle this long, because BMCs expire idle sessions
	// (commonly after 60s) and the driver runs no keep-alive goroutine.
	// Defaults to 30s.
	IdleRelogin time.Duration

	// RequestsPerSecond is the request budget of one endpoint (host:port,
	// [bmc.Endpoint.Key]): every IPMI request the driver sends (the four
	// of the session handshake, each command, the logout) takes a token
	// from a token bucket refilled at this rate; go-ipmi's resends of a
	// request that got no reply (Retries) take none. One bucket per endpoint
	// is shared by every session the Dialer opens to it, whatever its
	// credentials; it lives in the Dialer, so drivers from different Dialers
	// (and a Redfish Dialer for the same host) do not share it. A request
	// beyond the budget waits for its turn (first come, first served),
	// never dropped; the wait ends with the call's ctx, whose error the call
	// then fails with (wrapped). Stats reports the waits (Throttled,
	// ThrottleWait).
	//
	// Defaults to 50, as for Redfish: an IPMI endpoint manages one system
	// and a driver sends one request at a time, so the budget binds only
	// when several sessions to one BMC are busy at once. Negative means
	// unlimited.
	RequestsPerSecond float64
	// RequestBurst is how many requests may go out back to back after the
	// endpoint was quiet (the token bucket's size). Whatever the burst, no
	// one-second span carries more than max(RequestBurst,
	// RequestsPerSecond) requests (a window caps the bucket), so several
	// busy sessions never exceed the rate in any second, while a lone job
	// never waits: its whole sequence (18 requests for a netboot, 22 with a
	// re-login) fits the default. Defaults to 25, or RequestsPerSecond if
	// lower (at least 1).
	RequestBurst int

	// NoBootReadBack makes [Driver.BootOverride] fail with
	// bmc.ErrNotSupported, for BMCs whose Get System Boot Options does not
	// report what was set: OpenIPMI's ipmi_sim keeps only the device
	// selector and drops the valid, persistent and EFI bits, so reading it
	// back would report a wrong override. Defaults to false.
	NoBootReadBack bool

	// BootReadBack is how much of a boot override BootOverride reads back:
	// BootReadBackFull, BootReadBackDevice (everything but the boot mode)
	// or BootReadBackNone (the same as NoBootReadBack, which must not be
	// combined with another level). Defaults to BootReadBackFull, or
	// BootReadBackNone with NoBootReadBack.
	BootReadBack BootReadBack

	// Logger receives debug logs (V(1): sessions, V(2): requests). Passwords
	// never reach it. Defaults to logr.Discard(); a logger in the call's
	// context (logr.FromContextOrDiscard) is preferred when present.
	Logger logr.Logger
}

// resolved is Options with defaults applied and values validated.
type resolved struct {
	suites      []types.CipherSuiteID
	privilege   types.PrivilegeLevel
	timeout     time.Duration
	retries     int
	idleRelogin time.Duration
	readBack    BootReadBack
	rps         float64 // <= 0: unlimited
	burst       int
	log         logr.Logger
}

// DefaultRequestsPerSecond is the request budget of an endpoint when
// Options.RequestsPerSecond is zero.
const DefaultRequestsPerSecond = 50

func (o Options) resolve() (resolved, error) {
	r := resolved{
		timeout:     o.Timeout,
		retries:     o.Retries,
		idleRelogin: o.IdleRelogin,
		log:         o.Logger,
	}
	suites := o.CipherSuites
	if len(suites) == 0 {
		suites = DefaultCipherSuites
	}
	for i, s := range suites {
		id, err := checkSuite(s)
		if err != nil {
			return r, fmt.Errorf("ipmi: %s Options.CipherSuites[%d] %d: %w", verb(s), i, s, err)
		}
		r.suites = append(r.suites, id)
	}
	switch rb := o.BootReadBack; {
	case rb == "" && o.NoBootReadBack:
		r.readBack = BootReadBackNone
	case rb == "":
		r.readBack = BootReadBackFull
	case rb != BootReadBackFull && rb != BootReadBackDevice && rb != BootReadBackNone:
		return r, fmt.Errorf("ipmi: invalid Options.BootReadBack %q: want full, device or none", string(rb))
	case o.NoBootReadBack && rb != BootReadBackNone:
		return r, fmt.Errorf("ipmi: Options.NoBootReadBack contradicts Options.BootReadBack %q", string(rb))
	default:
		r.readBack = rb
	}
	lvl, err := o.Privilege.level()
	if err != nil {
		return r, err
	}
	r.privilege = lvl
	switch {
	case r.timeout < 0:
		return r, fmt.Errorf("ipmi: invalid Options.Timeout %s: must not be negative", r.timeout)
	case r.timeout == 0:
		r.timeout = 2 * time.Second
	}
	switch {
	case r.retries < 0:
		r.retries = 0
	case r.retries == 0:
		r.retries = 2
	}
	switch {
	case r.idleRelogin < 0:
		return r, fmt.Errorf("ipmi: invalid Options.IdleRelogin %s: must not be negative", r.idleRelogin)
	case r.idleRelogin == 0:
		r.idleRelogin = 30 * time.Second
	}
	switch {
	case o.RequestsPerSecond == 0:
		r.rps = DefaultRequestsPerSecond
	case o.RequestsPerSecond > 0:
		r.rps = o.RequestsPerSecond
	}
	switch {
	case o.RequestBurst < 0:
		return r, fmt.Errorf("ipmi: invalid Options.RequestBurst %d: must not be negative", o.RequestBurst)
	case o.RequestBurst == 0:
		r.burst = budget.BurstFor(r.rps)
	default:
		r.burst = o.RequestBurst
	}
	if r.log.GetSink() == nil {
		r.log = logr.Discard()
	}
	return r, nil
}

// checkSuite validates a cipher suite ID.
func checkSuite(s int) (types.CipherSuiteID, error) {
	if s < 0 || s > 255 {
		return 0, fmt.Errorf("want a cipher suite ID such as 3 or 17")
	}
	if s == 0 {
		return 0, fmt.Errorf("cipher suite 0 authenticates nothing")
	}
	if _, _, _, ok := types.GetCipherSuiteAlgorithms(types.CipherSuiteID(s)); !ok {
		return 0, fmt.Errorf("want an IPMI v2.0 cipher suite ID such as 3 or 17")
	}
	return types.CipherSuiteID(s), nil
}

func verb(s int) string {
	switch {
	case s == 0:
		return "refused"
	case s < 0 || s > 255:
		return "invalid"
	}
	return "unsupported"
}

// urlOptions are the option names an ipmi:// URL may carry ([Dialer.Open]).
var urlOptions = []string{"bootReadBack", "cipher", "privilege", "timeout"}

// withURLOptions applies an endpoint's options (bmc.Endpoint.Options) to r.
func (r resolved) withURLOptions(raw string) (resolved, error) {
	err := bmc.EachOption("ipmi", raw, urlOptions, func(name, v string) error {
		switch name {
		case "cipher":
			var suites []types.CipherSuiteID
			for _, f := range strings.Split(v, ",") {
				n, err := strconv.Atoi(f)
				if err != nil {
					return fmt.Errorf("want cipher suite IDs separated by commas, e.g. 17 or 17,3")
				}
				id, err := checkSuite(n)
				if err != nil {
					return fmt.Errorf("%s cipher suite %d: %v", verb(n), n, err)
				}
				if slices.Contains(suites, id) {
					return fmt.Errorf("cipher suite %d named twice", n)
				}
				suites = append(suites, id)
			}
			r.suites = suites
		case "privilege":
			if v == "" {
				return fmt.Errorf("want administrator, operator or user")
			}
			lvl, err := Privilege(v).level()
			if err != nil {
				return fmt.Errorf("want administrator, operator or user")
			}
			r.privilege = lvl
		case "bootReadBack":
			switch rb := BootReadBack(v); rb {
			case BootReadBackFull, BootReadBackDevice, BootReadBackNone:
				r.readBack = rb
			default:
				return fmt.Errorf("want full, device or none")
			}
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("want a positive duration such as 2s")
			}
			r.timeout = d
		}
		return nil
	})
	return r, err
}
