package bmclib

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/bmc-toolbox/bmclib/v2/providers/ipmitool"
	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.Dialer = (*IPMIToolDialer)(nil)

// IPMIToolOptions configure [NewIPMIToolDialer]. The zero value is ready
// to use.
type IPMIToolOptions struct {
	// Path is the ipmitool program. Defaults to "ipmitool" looked up on PATH.
	Path string
	// CipherSuite is the RMCP+ cipher suite ipmitool uses (-C). Defaults to
	// 0: bmclib's default, suite 3 then 17.
	CipherSuite int
	// Timeout bounds every call (bmclib runs ipmitool with a 5s request
	// timeout and ipmitool's own retries, which take 52 s per cipher suite
	// on a BMC that does not answer). Defaults to 60s.
	Timeout time.Duration
	// DialTimeout bounds Dial, whose ipmitool run (reading the power state)
	// also tells whether the BMC answers at all. Defaults to 8s, or Timeout
	// when that is shorter: a BMC that
	// answers opens a session in well under a second, and 8 s leaves room
	// for one of ipmitool's 5 s resends, while an unreachable BMC fails
	// (transient) within 10 s instead of ipmitool's 52 s per suite.
	DialTimeout time.Duration
	// Logger receives debug logs. Defaults to logr.Discard().
	Logger logr.Logger
}

// IPMIToolDialer dials bmclib's ipmitool provider for "ipmi" endpoints. It
// is safe for concurrent use.
type IPMIToolDialer struct {
	opts IPMIToolOptions
}

// NewIPMIToolDialer validates opts and finds ipmitool. Errors name the
// offending field.
func NewIPMIToolDialer(opts IPMIToolOptions) (*IPMIToolDialer, error) {
	if opts.CipherSuite < 0 || opts.CipherSuite > 255 {
		return nil, fmt.Errorf("bmclib: invalid IPMIToolOptions.CipherSuite %d: want an IPMI cipher suite ID such as 3 or 17, or 0 for bmclib's default", opts.CipherSuite)
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("bmclib: invalid IPMIToolOptions.Timeout %s: must not be negative", opts.Timeout)
	}
	if opts.DialTimeout < 0 {
		return nil, fmt.Errorf("bmclib: invalid IPMIToolOptions.DialTimeout %s: must not be negative", opts.DialTimeout)
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = defaultIPMIToolDialTimeout
		if opts.Timeout > 0 && opts.Timeout < opts.DialTimeout {
			opts.DialTimeout = opts.Timeout
		}
	}
	if opts.Path == "" {
		opts.Path = "ipmitool"
	}
	p, err := exec.LookPath(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("bmclib: IPMIToolOptions.Path %q: %w (install Debian package ipmitool)", opts.Path, err)
	}
	opts.Path = p
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	return &IPMIToolDialer{opts: opts}, nil
}

// defaultIPMIToolDialTimeout is IPMIToolOptions.DialTimeout's default.
const defaultIPMIToolDialTimeout = 8 * time.Second

// Dial implements [bmc.Dialer]. It checks the credentials by reading the
// power state once (the provider's Open), within IPMIToolOptions.DialTimeout.
//
// The BMC URL's options (bmc.Endpoint.Options, the ipmi driver's names)
// override the dialer's for this endpoint where bmclib's ipmitool provider
// can honour them: cipher=N (one suite), privilege=administrator (ipmitool's
// default; operator and user are refused), bootReadBack=none (the adapter
// never reads back; full and device are refused) and timeout=D (each
// ipmitool run, Dial's included). Anything else fails the dial with a
// permanent error naming the option, before ipmitool runs.
func (d *IPMIToolDialer) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	if ep.Protocol != "ipmi" {
		return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: bmc.Permanent(fmt.Errorf("bmclib ipmitool provider cannot dial protocol %q", ep.Protocol))}
	}
	opts := d.opts
	if ep.Options != "" {
		var err error
		if opts, err = opts.withURLOptions(ep.Options); err != nil {
			return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: bmc.Permanent(err)}
		}
	}
	host := ep.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // bmclib joins host and port with ":" and splits them again
	}
	popts := []ipmitool.Option{
		ipmitool.WithPort(strconv.Itoa(ep.EffectivePort())),
		ipmitool.WithIpmitoolPath(opts.Path),
		ipmitool.WithLogger(opts.Logger),
	}
	if opts.CipherSuite != 0 {
		popts = append(popts, ipmitool.WithCipherSuite(strconv.Itoa(opts.CipherSuite)))
	}
	p, err := ipmitool.New(host, creds.Username, creds.Password, popts...)
	if err != nil {
		return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: bmc.Permanent(err)}
	}
	return New(ctx, p, Options{
		Endpoint:       ep.String(),
		Timeout:        opts.Timeout,
		DialTimeout:    opts.DialTimeout,
		Classify:       ClassifyIPMIToolError,
		SessionPerCall: true,
		Logger:         opts.Logger,
	})
}

// ipmitoolRequestTimeout is the per-request timeout bmclib passes to
// ipmitool (-N 5).
const ipmitoolRequestTimeout = 5 * time.Second

// ClassifyIPMIToolError maps an error of bmclib's ipmitool provider to
// bmckit's contract. ipmitool reports failures only as text, so this
// matches its messages (ipmitool 1.8.x):
//
//   - "Unable to establish IPMI v2 / RMCP+ session": ipmitool prints this
//     both when the BMC refused the session and when it never answered.
//     A BMC that answers does so within one request timeout, while a
//     silent one makes ipmitool wait at least its 5s request timeout; so a
//     failure faster than 5s wraps [bmc.ErrUnauthorized] (wrong user name or
//     password, no common cipher suite, or insufficient privilege: ipmitool
//     does not say which), a slower one is transient.
//   - "Username is too long", "password is longer than 20 bytes":
//     [bmc.ErrUnauthorized] (no IPMI BMC can hold such credentials).
//   - "Invalid command" (completion code C1h): [bmc.ErrNotSupported].
//   - "Insufficient privilege": [bmc.ErrUnauthorized].
//   - "requested state type unknown": permanent.
//   - anything else: transient.
func ClassifyIPMIToolError(err error, elapsed time.Duration) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Unable to establish IPMI v2 / RMCP+ session"), strings.Contains(msg, "Unable to establish LAN session"):
		if elapsed < ipmitoolRequestTimeout {
			return fmt.Errorf("%w: ipmitool could not open a session although the BMC answered: wrong user name or password, no common cipher suite, or insufficient privilege (ipmitool does not say which): %w", bmc.ErrUnauthorized, err)
		}
		return bmc.Transient(fmt.Errorf("ipmitool could not open a session: the BMC did not answer within %s: %w", elapsed.Round(time.Millisecond), err))
	case strings.Contains(msg, "Username is too long"), strings.Contains(msg, "password is longer than"):
		return fmt.Errorf("%w: the credentials exceed IPMI's limits (16-byte user name, 20-byte password): %w", bmc.ErrUnauthorized, err)
	case strings.Contains(msg, "Invalid command"):
		return fmt.Errorf("%w: %w", bmc.ErrNotSupported, err)
	case strings.Contains(msg, "Insufficient privilege"):
		return fmt.Errorf("%w: %w", bmc.ErrUnauthorized, err)
	case strings.Contains(msg, "requested state type unknown"):
		return bmc.Permanent(err)
	}
	return bmc.Transient(err)
}
