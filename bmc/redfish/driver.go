package redfish

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

// Driver is an open Redfish connection to one system: one session (or basic
// auth when the BMC has no SessionService) over one kept-alive connection.
// Its methods are safe for concurrent use; they are serialized.
type Driver struct {
	opts  Options
	log   logr.Logger
	ep    bmc.Endpoint
	epStr string
	creds bmc.Credentials
	wire  *wire
	hc    *http.Client

	mu          sync.Mutex
	client      *gofish.APIClient // base client; every call uses WithContext
	closed      bool
	sessionsURI string // "" when the BMC has no SessionService
	sessionURI  string // our session, for logout
	basic       bool

	systemURI   string
	sys         systemDoc         // last system document read
	resetTypes  []string          // advertised reset types; nil when unknown
	refused     map[string]bool   // advertised reset types the BMC refused
	noIfMatch   bool              // the BMC rejects If-Match
	mediaURIs   map[string]string // MediaKind -> VirtualMedia URI
	managerURIs []string
}

var (
	_ bmc.Driver             = (*Driver)(nil)
	_ bmc.BootOverrideSetter = (*Driver)(nil)
	_ bmc.BootOverrideGetter = (*Driver)(nil)
	_ bmc.VirtualMedia       = (*Driver)(nil)
	_ bmc.BMCResetter        = (*Driver)(nil)
	_ bmc.StatsReporter      = (*Driver)(nil)
)

func dial(ctx context.Context, opts Options, tlsCfg *tls.Config, log logr.Logger, ep bmc.Endpoint, creds bmc.Credentials) (*Driver, error) {
	w := newWire(tlsCfg, opts.ConnectTimeout)
	var rt http.RoundTripper = w
	if opts.WrapTransport != nil {
		if wrapped := opts.WrapTransport(w); wrapped != nil {
			rt = wrapped // outside the wire, which counts what it passes on
		}
	}
	d := &Driver{
		opts: opts, log: log, ep: ep, epStr: ep.String(), creds: creds, wire: w,
		hc:        &http.Client{Transport: rt},
		refused:   map[string]bool{},
		mediaURIs: map[string]string{},
	}
	if err := d.connect(ctx); err != nil {
		d.wire.CloseIdleConnections()
		return nil, d.opErr("dial", err)
	}
	if err := d.login(ctx); err != nil {
		d.wire.CloseIdleConnections()
		return nil, d.opErr("login", err)
	}
	if err := d.selectSystem(ctx); err != nil {
		d.logout(ctx)
		d.wire.CloseIdleConnections()
		op := "select system"
		if d.basic && errors.Is(err, bmc.ErrUnauthorized) {
			op = "login (basic auth, no SessionService)" // the first authenticated request
		}
		return nil, d.opErr(op, err)
	}
	d.logger(ctx).V(1).Info("connected", "system", d.systemURI, "basicAuth", d.basic)
	return d, nil
}

func (d *Driver) opErr(op string, err error) error {
	var oe *bmc.OpError
	if errors.As(err, &oe) {
		return err
	}
	return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: d.scrub(err)}
}

// scrub removes the password from an error text, should a BMC echo it back.
func (d *Driver) scrub(err error) error {
	if err == nil || len(d.creds.Password) < 4 || !strings.Contains(err.Error(), d.creds.Password) {
		return err
	}
	return &scrubbedError{msg: strings.ReplaceAll(err.Error(), d.creds.Password, "<redacted>"), err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// connect fetches the service root through gofish, which keeps the ctx it is
// given: it gets a ctx without cancellation (the request itself is bounded
// by RequestTimeout), and every later call uses WithContext.
func (d *Driver) connect(ctx context.Context) error {
	return d.retry(ctx, func(rctx context.Context) error {
		c, err := gofish.ConnectContext(rctx, gofish.ClientConfig{
			Endpoint:          d.ep.BaseURL(),
			HTTPClient:        d.hc,
			ReuseConnections:  true,
			NoModifyTransport: true,
		})
		if err != nil {
			return err
		}
		d.client = c.WithContext(context.WithoutCancel(rctx))
		return nil
	})
}

// serviceRootLinks is what bmckit reads from the service root.
type serviceRootLinks struct {
	Systems schemas.Link
	Links   struct {
		Sessions schemas.Link
	}
}

func parseServiceRoot(b []byte) (serviceRootLinks, error) {
	var r serviceRootLinks
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("service root is not a Redfish document: %w", err)
	}
	return r, nil
}

// login creates the session, or sets up basic auth when the service root
// names no Sessions collection.
func (d *Driver) login(ctx context.Context) error {
	root, err := parseServiceRoot(d.wire.serviceRoot())
	if err != nil {
		return bmc.Permanent(err)
	}
	d.sessionsURI = string(root.Links.Sessions)
	if d.sessionsURI == "" {
		d.logger(ctx).V(1).Info("no SessionService; using basic auth")
		d.basic = true
		d.wire.setBasic(d.creds.Username, d.creds.Password)
		return nil
	}
	return d.createSession(ctx)
}

func (d *Driver) createSession(ctx context.Context) error {
	d.wire.clearAuth(d.sessionsURI)
	var token, location string
	err := d.retry(ctx, func(rctx context.Context) error {
		resp, err := d.client.WithContext(rctx).Post(d.sessionsURI, map[string]string{
			"UserName": d.creds.Username, "Password": d.creds.Password,
		})
		if err != nil {
			return err
		}
		defer drain(resp)
		token, location = resp.Header.Get("X-Auth-Token"), resp.Header.Get("Location")
		return nil
	})
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusMethodNotAllowed) {
			d.logger(ctx).Info("session creation not offered; using basic auth", "status", se.StatusCode)
			d.basic = true
			d.wire.setBasic(d.creds.Username, d.creds.Password)
			return nil
		}
		return fmt.Errorf("create session as user %q: %w", d.creds.Username, err)
	}
	if token == "" {
		d.logger(ctx).Info("session created without X-Auth-Token; using basic auth")
		d.basic = true
		d.wire.setBasic(d.creds.Username, d.creds.Password)
		return nil
	}
	d.wire.setToken(token)
	d.wire.logins.Add(1)
	d.sessionURI = pathOf(location)
	return nil
}

// pathOf reduces an absolute Location to its path.
func pathOf(loc string) string {
	if i := strings.Index(loc, "://"); i >= 0 {
		rest := loc[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return rest[j:]
		}
		return ""
	}
	return loc
}

func drain(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
	}
}

// Close logs out and closes the connection. Idempotent. The logout is
// attempted even with a cancelled ctx (bounded by min(RequestTimeout, 5s)):
// a leaked session occupies one of the BMC's few session slots until it
// times out.
func (d *Driver) Close(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.logout(ctx)
	d.wire.CloseIdleConnections()
	return nil
}

func (d *Driver) logout(ctx context.Context) {
	if d.sessionURI == "" {
		return
	}
	// BMCs allow few sessions (often 4-16) and keep an abandoned one for
	// its whole timeout, so the logout is attempted even when ctx is already
	// cancelled (a stopping runner), bounded by a short timeout of its own.
	timeout := min(d.opts.RequestTimeout, 5*time.Second)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if _, err := d.client.WithContext(rctx).Delete(d.sessionURI); err != nil {
		d.logger(ctx).V(1).Info("logout failed; the session will expire on the BMC", "error", classify(err).Error())
	}
	d.sessionURI = ""
}

// Stats reports the requests, connections and logins of this driver.
func (d *Driver) Stats() bmc.Stats {
	return bmc.Stats{
		Requests:    d.wire.requests.Load(),
		Connections: d.wire.connections.Load(),
		Logins:      d.wire.logins.Load(),
	}
}

// begin locks the driver for one operation.
func (d *Driver) begin() (func(), error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, bmc.Permanent(errors.New("driver is closed"))
	}
	return d.mu.Unlock, nil
}

// do runs one request with the per-request timeout. A 401 on a session is
// answered by logging in again once and repeating the request; a second 401
// is ErrUnauthorized. Transient failures are retried when idempotent.
func (d *Driver) do(ctx context.Context, idempotent bool, fn func(c *gofish.APIClient) error) error {
	relogged := false
	for {
		run := func(rctx context.Context) error { return fn(d.client.WithContext(rctx)) }
		var err error
		if idempotent {
			err = d.retry(ctx, run)
		} else {
			err = d.once(ctx, run)
		}
		if relogged && errors.Is(err, bmc.ErrUnauthorized) {
			return fmt.Errorf("the BMC also rejected the new session after logging in again: %w", err)
		}
		if err == nil || relogged || d.basic || d.sessionsURI == "" || !errors.Is(err, bmc.ErrUnauthorized) {
			return err
		}
		d.logger(ctx).Info("session rejected (expired?); logging in again")
		relogged = true
		if lerr := d.createSession(ctx); lerr != nil {
			return fmt.Errorf("log in again after the session was rejected: %w", lerr)
		}
	}
}

// once runs fn with the request timeout and classifies its error.
func (d *Driver) once(ctx context.Context, fn func(rctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, d.opts.RequestTimeout)
	defer cancel()
	err := fn(rctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), classify(err))
	}
	if rctx.Err() != nil {
		return bmc.Transient(fmt.Errorf("no answer within the request timeout %s: %w", d.opts.RequestTimeout, context.DeadlineExceeded))
	}
	return classify(err)
}

// retry runs fn, retrying transient failures Options.Retries times with
// doubling back-off.
func (d *Driver) retry(ctx context.Context, fn func(rctx context.Context) error) error {
	delay := d.opts.RetryDelay
	for attempt := 0; ; attempt++ {
		err := d.once(ctx, fn)
		if err == nil || attempt >= d.opts.Retries || !bmc.IsTransient(err) || ctx.Err() != nil {
			return err
		}
		d.logger(ctx).V(1).Info("transient failure; retrying", "attempt", attempt+1, "error", d.scrub(err).Error())
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		case <-d.opts.Clock.After(delay):
		}
		delay *= 2
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
