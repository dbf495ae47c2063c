package redfish

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/budget"
	"github.com/bmckit/bmckit/clock"
)

// Clock is the time source for retry back-off and settle polling:
// [clock.Clock], so clock.Real, clock.Fake and any value with Now and After
// fit.
type Clock = clock.Clock

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// DefaultRequestsPerSecond is the request budget of an endpoint when
// Options.RequestsPerSecond is zero.
const DefaultRequestsPerSecond = 50

// Options configure a [Dialer]. The zero value verifies certificates against
// the system roots and uses the defaults below.
type Options struct {
	// CACertPEM is a PEM bundle of the CAs that sign BMC certificates; when
	// set, only these are trusted. Defaults to the system roots.
	CACertPEM []byte
	// InsecureSkipVerify disables certificate verification for https BMCs.
	// Defaults to false (verify). Use only for BMCs with self-signed
	// certificates you cannot replace.
	InsecureSkipVerify bool

	// ConnectTimeout bounds the TCP connect plus TLS handshake. Defaults to
	// 10s.
	ConnectTimeout time.Duration
	// RequestTimeout bounds each HTTP request (send, wait, read the answer).
	// Defaults to 30s. An address's timeout=10s option overrides it.
	RequestTimeout time.Duration

	// MaxConnections bounds the TCP (and TLS) connections of one session,
	// shared by every system opened on it with [Driver.OpenSystem];
	// requests beyond it wait for a free connection, within their
	// RequestTimeout. One driver sends one request at a time, so more than
	// one helps only systems that share a session: a driver for a single
	// system never opens a second connection. Defaults to 4, so systems
	// behind one chassis manager do not queue every poll behind each other
	// on a BMC that answers in 100 ms, while staying well inside the
	// connection slots BMCs have.
	MaxConnections int

	// RequestsPerSecond is the request budget of one endpoint (host:port,
	// [bmc.Endpoint.Key]): every HTTP request the driver sends (service
	// root, login, GET, PATCH, POST, logout, retries) takes a token from a
	// token bucket refilled at this rate. One bucket per endpoint is shared
	// by every session the Dialer opens to it, whatever its credentials, and
	// by every system opened on those sessions with [Driver.OpenSystem]; it
	// lives in the Dialer, so drivers from different Dialers do not share
	// it. A request beyond the budget waits for its turn (first come, first
	// served), never dropped; the wait counts against RequestTimeout and
	// ends with the request's ctx, whose error the request then fails with
	// (wrapped). Stats reports the waits (Throttled, ThrottleWait).
	//
	// Defaults to 50: far above one system's own traffic (a job polls
	// power 4 times a second, and one driver sends one request at a time,
	// which a real BMC answers in 50-500 ms), so it binds only when many
	// systems share an endpoint (a chassis manager, a multi-node service, an
	// emulator), where 50/s still serves a 250 ms poll of about a dozen
	// systems and slows larger fleets' detection rather than flood the BMC.
	// Set the rate your BMC sustains, minus a margin. Negative means
	// unlimited.
	RequestsPerSecond float64
	// RequestBurst is how many requests may go out back to back after the
	// endpoint was quiet (the token bucket's size). Whatever the burst, no
	// one-second span carries more than max(RequestBurst,
	// RequestsPerSecond) requests: a window caps what the bucket alone
	// would let out (burst + rate), so a crowd of systems never exceeds the
	// rate in any second, as a BMC that counts per second sees it, while a
	// lone job on a quiet endpoint never waits. Defaults to 25 (one job's
	// whole request sequence), or RequestsPerSecond if lower (at least 1).
	RequestBurst int

	// Retries is how many times an idempotent request (GET, login) is retried
	// after a transient failure (5xx, 503, reset, timeout) before the error
	// is returned; actions (POST, PATCH) are never retried here, the job
	// runner retries them. Defaults to 2; negative means none.
	Retries int
	// RetryDelay is the first back-off between retries; it doubles. Defaults
	// to 200ms.
	RetryDelay time.Duration

	// NoEventStream turns the EventService's Server-Sent Events off:
	// WatchPower (bmc.PowerWatcher) answers bmc.ErrNotSupported without a
	// request, and jobs only poll. Defaults to false: where the BMC offers
	// the stream, a job waiting for a power change opens it (one stream per
	// session, shared by its systems) and confirms the change with one GET
	// after the event. An address's events=off (or events=on) option
	// overrides it.
	NoEventStream bool

	// SettleTimeout bounds how long SetPower waits for a power-off to land
	// when it has to emulate a refused PowerCycle as ForceOff then On.
	// Defaults to 2m.
	SettleTimeout time.Duration

	// EmulateBootOnce asks jobs (package job) to emulate one-time boot
	// overrides on this driver's BMCs: the boot-device task sets the
	// override persistent (Continuous), and the job puts back the override
	// it found after the boot it was for. For BMCs and emulators that store
	// Once as Continuous or ignore it. A task's own BootDeviceAction.EmulateOnce
	// takes precedence. Defaults to false: a real one-time override, which
	// the BMC clears by itself even if the job's host dies before the restore.
	// An address's bootOnce=emulate (or bootOnce=native) option overrides it.
	EmulateBootOnce bool

	// WrapTransport wraps the driver's HTTP transport, e.g. for tracing
	// (otelhttp.NewTransport) or to add headers. It sees every request,
	// logins and logouts included, with the ctx of the call that made it
	// (req.Context() carries that ctx's values), before the driver adds the
	// auth header and before the request waits for its turn in the request
	// budget (so a tracing span includes that wait). It is called once per
	// Dial. Defaults to none.
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// Logger receives connection-level events (login, re-login, fallbacks).
	// A logger in the Dial ctx (logr.NewContext) takes precedence. Defaults
	// to logr.Discard().
	Logger logr.Logger
	// Clock is the time source for back-off and polling. Defaults to the
	// wall clock.
	Clock Clock

	// MaxFirmwareImage bounds a firmware image the driver fetches to push
	// it to a BMC that takes only a multipart upload
	// (bmc.FirmwareUpdater): a larger Content-Length is refused before
	// anything is sent, a longer stream is cut and the update fails.
	// Defaults to 1 GiB.
	MaxFirmwareImage int64
	// FirmwareUploadTimeout bounds such an upload (fetching the image and
	// sending it to the BMC), in place of RequestTimeout. Defaults to 30
	// minutes.
	FirmwareUploadTimeout time.Duration
	// FirmwareImageClient fetches firmware images for multipart uploads.
	// Defaults to a client on http.DefaultTransport (the system roots and
	// the environment's proxy).
	FirmwareImageClient *http.Client
}

func (o Options) withDefaults() Options {
	if o.MaxFirmwareImage <= 0 {
		o.MaxFirmwareImage = 1 << 30
	}
	if o.FirmwareUploadTimeout <= 0 {
		o.FirmwareUploadTimeout = 30 * time.Minute
	}
	if o.FirmwareImageClient == nil {
		o.FirmwareImageClient = &http.Client{Transport: http.DefaultTransport}
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = 4
	}
	if o.RequestsPerSecond == 0 {
		o.RequestsPerSecond = DefaultRequestsPerSecond
	}
	if o.RequestBurst <= 0 {
		o.RequestBurst = budget.BurstFor(o.RequestsPerSecond)
	}
	if o.Retries == 0 {
		o.Retries = 2
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 200 * time.Millisecond
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = 2 * time.Minute
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.Clock == nil {
		o.Clock = wallClock{}
	}
	return o
}

func (o Options) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.InsecureSkipVerify {
		cfg.InsecureSkipVerify = true //nolint:gosec // only when the user asks for it
	}
	if len(o.CACertPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(o.CACertPEM) {
			return nil, fmt.Errorf("redfish: Options.CACertPEM holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// Dialer opens Redfish [Driver]s. It implements [bmc.Dialer] for endpoints
// whose Protocol is "redfish"; register it on a [bmc.SchemeDialer]. It is
// safe for concurrent use. It holds the per-endpoint request budgets
// (Options.RequestsPerSecond), so dial every session to an endpoint through
// one Dialer: two Dialers do not share their budgets.
type Dialer struct {
	opts    Options
	tls     *tls.Config
	err     error
	budgets *budget.Set // one request budget per endpoint Key
	noSSE   *sseMemo    // endpoints found without an SSE stream (events.go)
}

var _ bmc.Dialer = (*Dialer)(nil)

// NewDialer returns a Dialer with the given options. An invalid option (a CA
// bundle without certificates) is reported by every Dial.
func NewDialer(opts Options) *Dialer {
	opts = opts.withDefaults()
	cfg, err := opts.tlsConfig()
	return &Dialer{opts: opts, tls: cfg, err: err, budgets: budget.NewSet(opts.RequestsPerSecond, opts.RequestBurst), noSSE: &sseMemo{}}
}

// Dial connects to the BMC, logs in (one session, reused until Close) and
// selects the system: the one named by ep.Path (/redfish/v1/Systems/ID, where
// ID may also be the system's UUID), or the only one. Errors are
// [*bmc.OpError]; bad credentials wrap [bmc.ErrUnauthorized].
func (d *Dialer) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	drv, err := d.DialDriver(ctx, ep, creds)
	if err != nil {
		return nil, err
	}
	return drv, nil
}

// DialDriver is Dial returning the concrete *Driver.
//
// The BMC URL may carry per-endpoint options in its query
// ([bmc.Endpoint.Options]), which override the Dialer's [Options] for this
// endpoint, e.g.
// redfish://10.0.0.5/redfish/v1/Systems/1?bootOnce=emulate&events=off&timeout=10s:
//
//	bootOnce=emulate|native  Options.EmulateBootOnce (true|false)
//	events=on|off            Options.NoEventStream (false|true)
//	timeout=10s              Options.RequestTimeout (a Go duration, > 0)
//
// Each may appear once; any other name, or another value, fails the dial
// with a permanent error naming the option, before any request. The options
// hold for the session the dial opens, and so for every system opened on it
// with [Driver.OpenSystem], which refuses an address whose options differ.
// The request budget (Options.RequestsPerSecond) is not an address option:
// it is the BMC's, shared by all its addresses.
func (d *Dialer) DialDriver(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (*Driver, error) {
	if d.err != nil {
		return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: bmc.Permanent(d.err)}
	}
	if ep.Protocol != "redfish" {
		return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: fmt.Errorf("redfish dialer cannot open protocol %q: %w", ep.Protocol, bmc.ErrNotSupported)}
	}
	opts := d.opts
	if ep.Options != "" {
		var err error
		if opts, err = opts.withURLOptions(ep.Options); err != nil {
			return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: bmc.Permanent(err)}
		}
	}
	log := opts.Logger
	if l, err := logr.FromContext(ctx); err == nil {
		log = l
	}
	return dial(ctx, opts, d.tls, d.budgets, d.noSSE, log, ep, creds)
}
