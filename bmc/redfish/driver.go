package redfish

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/budget"
)

// Driver is an open Redfish connection to one system: a session (or basic
// auth when the BMC has no SessionService) over kept-alive connections, and
// what the driver learned about its system. The Driver that Dial returns owns
// the session; [Driver.OpenSystem] returns Drivers for the other systems of
// the same service that share it. Its methods are safe for concurrent use;
// they are serialized per Driver, while Drivers sharing a session run their
// calls concurrently.
type Driver struct {
	s     *session
	owner bool // Close ends the session
	// counts is what this Driver's calls cost (Stats): the session's
	// owner counts for Dial's Driver, counts of its own for one opened
	// with OpenSystem.
	counts *counts
	log    logr.Logger
	ep     bmc.Endpoint
	epStr  string

	mu        sync.Mutex
	closed    atomic.Bool // written under mu
	systemURI string
	sys       systemDoc // last system document read
	// readScope is the bmc.ReadScope that sys was read under; nil when it
	// was read under none or an action was sent since (see recentSystem).
	readScope  *bmc.ReadScope
	resetTypes []string          // advertised reset types; nil when unknown
	refused    map[string]bool   // advertised reset types the BMC refused
	noIfMatch  bool              // the BMC rejects If-Match
	mediaURIs  map[string]string // MediaKind -> VirtualMedia URI
	mgr        *managerDoc       // the system's manager, once picked (managers.go)
	upd        *updateService    // the UpdateService, once read (firmware.go)
	bios       biosCache         // bios.go
	needs      map[string]error  // CheckNeed's answers (needs.go)
	logs       []*logServiceDoc  // the log services, once read (eventlog.go)
	ledURI     string            // the resource that holds the locator, once found (locatorled.go)
}

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

// EmulateBootOnce reports Options.EmulateBootOnce, or the address's
// bootOnce option (bootOnce=emulate|native) where it has one; package job
// asks for it (by type assertion) when a one-time boot-device task does not
// say.
func (d *Driver) EmulateBootOnce() bool { return d.s.opts.EmulateBootOnce }

func newDriver(s *session, ep bmc.Endpoint, owner bool) *Driver {
	c := &s.wire.owner
	if !owner {
		c = new(counts)
	}
	return &Driver{
		s: s, owner: owner, counts: c, log: s.log.WithValues("bmc", ep.Redacted()), ep: ep, epStr: ep.Redacted(),
		refused:   map[string]bool{},
		mediaURIs: map[string]string{},
	}
}

func dial(ctx context.Context, opts Options, tlsCfg *tls.Config, budgets *budget.Set, noSSE *sseMemo, log logr.Logger, ep bmc.Endpoint, creds bmc.Credentials) (*Driver, error) {
	s := newSession(opts, tlsCfg, budgets, log, ep, creds)
	s.events.memo = noSSE
	d := newDriver(s, ep, true)
	ctx = withCounts(ctx, d.counts)
	if err := s.connect(ctx, d.logger(ctx)); err != nil {
		s.abandon()
		return nil, d.dialErr(d.opErr("dial", err))
	}
	if err := s.logIn(ctx, d.logger(ctx)); err != nil {
		s.abandon()
		return nil, d.dialErr(d.opErr("login", err))
	}
	if err := d.selectSystem(ctx); err != nil {
		s.close(ctx, d.logger(ctx)) // the logout, if any, is counted
		op := "select system"
		if s.isBasic() && errors.Is(err, bmc.ErrUnauthorized) {
			op = "login (basic auth, no SessionService)" // the first authenticated request
		}
		return nil, d.dialErr(d.opErr(op, err))
	}
	d.logger(ctx).V(1).Info("connected", "system", d.systemURI, "basicAuth", s.isBasic())
	return d, nil
}

// OpenSystem implements [bmc.SystemOpener]: it returns a Driver for the
// system ep names (by Id or UUID, or the only one, as Dial selects it) on
// the same Redfish service, sharing this driver's session and connections:
// no login, one request to read the system. ep must have this driver's
// protocol, transport, host, effective port and options
// ([bmc.Endpoint.Options], which are the session's); otherwise the error
// wraps [bmc.ErrNotSupported]. Closing the returned driver releases only its own
// state; closing the driver Dial returned logs the session out, after which
// calls on every driver opened from it fail with an error wrapping
// [bmc.ErrSessionExpired]. Safe for concurrent use, also on a driver that
// was itself opened with OpenSystem.
func (d *Driver) OpenSystem(ctx context.Context, ep bmc.Endpoint) (bmc.Driver, error) {
	s := d.s
	if !sameService(s.ep, ep) {
		return nil, &bmc.OpError{Op: "open system", Endpoint: ep.String(), Err: fmt.Errorf(
			"the session is on %s (%s), not on %s (%s): dial that endpoint instead: %w",
			s.ep.HostPort(), transportOf(s.ep), ep.HostPort(), transportOf(ep), bmc.ErrNotSupported)}
	}
	if ep.Options != s.ep.Options {
		// The options (timeout, events, boot-once emulation) are the
		// session's: a view with other options would silently get these.
		return nil, &bmc.OpError{Op: "open system", Endpoint: ep.String(), Err: fmt.Errorf(
			"the session was dialed with options %q, not %q: dial that address instead: %w",
			s.ep.Options, ep.Options, bmc.ErrNotSupported)}
	}
	if d.closed.Load() {
		return nil, &bmc.OpError{Op: "open system", Endpoint: ep.String(), Err: bmc.Permanent(fmt.Errorf("the driver for %s it was opened from is closed", d.epStr))}
	}
	if _, err := s.current(); err != nil {
		return nil, &bmc.OpError{Op: "open system", Endpoint: ep.String(), Err: err}
	}
	nd := newDriver(s, ep, false)
	if err := nd.selectSystem(ctx); err != nil {
		return nil, nd.opErr("select system", err)
	}
	nd.logger(ctx).V(1).Info("opened system on a shared session", "system", nd.systemURI)
	return nd, nil
}

// DialError is what a failed Dial returns: the *bmc.OpError (reach it with
// errors.As, or through Unwrap), plus what the attempt cost on the wire,
// which no Driver is left to report. It implements [bmc.StatsReporter], so
// a caller can account for a failed login:
//
//	var sr bmc.StatsReporter
//	if errors.As(err, &sr) { wire := sr.Stats() ... }
type DialError struct {
	Err   error
	stats bmc.Stats
}

var _ bmc.StatsReporter = (*DialError)(nil)

func (e *DialError) Error() string { return e.Err.Error() }
func (e *DialError) Unwrap() error { return e.Err }

// Stats reports the requests, connections and logins of the failed dial,
// the logout of a session it had created included.
func (e *DialError) Stats() bmc.Stats { return e.stats }

func (d *Driver) dialErr(err error) error {
	return &DialError{Err: err, stats: d.Stats()}
}

func (d *Driver) opErr(op string, err error) error {
	var oe *bmc.OpError
	if errors.As(err, &oe) {
		return err
	}
	return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: d.s.scrub(err)}
}

// Close releases the driver. Idempotent. On the driver Dial returned it
// logs out and closes the connections, ending the session for every driver
// opened from it with OpenSystem; on those it only marks the driver closed.
// The logout is attempted even with a cancelled ctx (bounded by
// min(RequestTimeout, 5s)): a leaked session occupies one of the BMC's few
// session slots until it times out.
func (d *Driver) Close(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil
	}
	d.closed.Store(true)
	if d.owner {
		d.s.close(withCounts(ctx, d.counts), d.logger(ctx)) // the logout counts toward the owner
	}
	return nil
}

// Stats reports the requests, connections and logins of this driver's
// calls, whatever their outcome (failed calls, retries and redirects
// included), and how many of its requests waited for the endpoint's request
// budget and for how long (Options.RequestsPerSecond). On drivers that share
// a session it is each driver's own share (see [Driver.OpenSystem]): a
// request counts toward the driver whose call sent it, a re-login toward
// the driver whose request the BMC rejected, a TCP connection toward the
// request that opened it, and the driver Dial returned also counts the
// session's login and (after Close) its logout. So the Stats of every driver
// on a session add up to the session's traffic.
func (d *Driver) Stats() bmc.Stats { return d.counts.stats() }

// begin locks the driver for one operation.
func (d *Driver) begin() (func(), error) {
	d.mu.Lock()
	if d.closed.Load() {
		d.mu.Unlock()
		return nil, bmc.Permanent(errors.New("driver is closed"))
	}
	if _, err := d.s.current(); err != nil {
		d.mu.Unlock()
		return nil, err
	}
	return d.mu.Unlock, nil
}

// do runs one request with the per-request timeout. A 401 on a session is
// answered by logging in again once and repeating the request (the drivers
// sharing the session log in once among them); a second 401 is
// ErrUnauthorized. Transient failures are retried when idempotent.
func (d *Driver) do(ctx context.Context, idempotent bool, fn func(c *gofish.APIClient) error) error {
	s := d.s
	ctx = withCounts(ctx, d.counts) // what it sends counts toward d
	if !idempotent {
		// An action (reset, PATCH, media): the last read no longer shows
		// the system as it is, whether or not the request succeeds.
		d.readScope = nil
	}
	relogged := false
	for {
		auth, err := s.current()
		if err != nil {
			return err
		}
		run := func(rctx context.Context) error { return fn(s.client.WithContext(rctx)) }
		if idempotent {
			err = s.retry(ctx, d.logger(ctx), run)
		} else {
			err = s.once(ctx, run)
		}
		if relogged && errors.Is(err, bmc.ErrUnauthorized) {
			return fmt.Errorf("the BMC also rejected the new session after logging in again: %w", err)
		}
		if err == nil || relogged || auth.basic || s.sessionsURI == "" || !errors.Is(err, bmc.ErrUnauthorized) {
			return err
		}
		relogged = true
		if lerr := s.relogin(ctx, auth.gen, d.logger(ctx)); lerr != nil {
			if errors.Is(lerr, bmc.ErrSessionExpired) {
				return lerr
			}
			return fmt.Errorf("log in again after the session was rejected: %w", lerr)
		}
	}
}

// getJSON GETs uri and decodes the body into each of dst; it returns the
// ETag header.
func (d *Driver) getJSON(ctx context.Context, uri string, dst ...any) (string, error) {
	var etag string
	err := d.do(ctx, true, func(c *gofish.APIClient) error {
		resp, err := c.Get(uri)
		if err != nil {
			return err
		}
		defer drain(resp)
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if err != nil {
			return err
		}
		for _, v := range dst {
			if err := json.Unmarshal(body, v); err != nil {
				return bmc.Permanent(fmt.Errorf("GET %s: the BMC answered invalid JSON: %w", uri, err))
			}
		}
		etag = resp.Header.Get("ETag")
		return nil
	})
	return etag, err
}

// collection GETs a resource collection and returns its member URIs.
func (d *Driver) collection(ctx context.Context, uri string) ([]string, error) {
	var c struct{ Members schemas.Links }
	if _, err := d.getJSON(ctx, uri, &c); err != nil {
		return nil, err
	}
	return c.Members.ToStrings(), nil
}

// logger is the logger in ctx (a controller's per-reconcile logger), else
// the dialer's, with the BMC named either way.
func (d *Driver) logger(ctx context.Context) logr.Logger {
	if l, err := logr.FromContext(ctx); err == nil {
		return l.WithValues("bmc", d.epStr)
	}
	return d.log
}
