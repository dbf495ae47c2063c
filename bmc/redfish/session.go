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
	"github.com/bmckit/bmckit/bmc/budget"
)

// session is one login on one Redfish service over one set of kept-alive
// connections. The [Driver] that Dial returns owns it; every Driver opened
// from it with OpenSystem shares it. It holds no per-system state, and no
// lock of it is held across an HTTP request, so the systems sharing it run
// their calls concurrently (up to Options.MaxConnections requests on the
// wire at once).
type session struct {
	opts  Options
	log   logr.Logger // the dialer's logger, without the BMC named
	ep    bmc.Endpoint
	creds bmc.Credentials
	wire  *wire
	hc    *http.Client
	// release gives the endpoint's request budget back when the session
	// closes (or its dial fails); idempotent.
	release func()

	// Set while dialing, before the session is shared; read-only after.
	client      *gofish.APIClient // base client; every call uses WithContext
	sessionsURI string            // "" when the BMC has no SessionService

	mu         sync.Mutex
	closed     bool
	basic      bool          // HTTP basic auth instead of a session
	sessionURI string        // our session, for logout
	gen        uint64        // counts successful logins, to join re-logins
	login      *loginAttempt // the re-login in flight, or nil

	events eventHub // the EventService stream shared by the session's systems (events.go)
}

// loginAttempt is a re-login in flight; callers that saw the same expired
// session wait for it instead of logging in themselves.
type loginAttempt struct {
	done     chan struct{}
	err      error // set before done is closed
	canceled bool  // it failed because its caller's ctx ended
}

// errSessionClosed is what calls on a driver opened with OpenSystem return
// once the driver owning the session closed it: the connection is spent,
// dial again.
var errSessionClosed = bmc.Transient(fmt.Errorf("the shared Redfish session was closed by the driver that opened it: %w", bmc.ErrSessionExpired))

func newSession(opts Options, tlsCfg *tls.Config, budgets *budget.Set, log logr.Logger, ep bmc.Endpoint, creds bmc.Credentials) *session {
	bg, release := budgets.Acquire(ep.Key())
	w := newWire(tlsCfg, opts.ConnectTimeout, opts.MaxConnections, bg)
	var rt http.RoundTripper = w
	if opts.WrapTransport != nil {
		if wrapped := opts.WrapTransport(w); wrapped != nil {
			rt = wrapped // outside the wire, which counts what it passes on
		}
	}
	return &session{opts: opts, log: log, ep: ep, creds: creds, wire: w, hc: &http.Client{Transport: rt}, release: release}
}

// authState is what a call needs to know about the login it is made under.
type authState struct {
	gen   uint64
	basic bool
}

// current returns the login calls are made under, or errSessionClosed.
func (s *session) current() (authState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return authState{}, errSessionClosed
	}
	return authState{gen: s.gen, basic: s.basic}, nil
}

func (s *session) isBasic() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.basic
}

func (s *session) useBasic() {
	s.mu.Lock()
	s.basic = true
	s.mu.Unlock()
	s.wire.setBasic(s.creds.Username, s.creds.Password)
}

// scrub removes the password from an error text, should a BMC echo it back.
func (s *session) scrub(err error) error {
	if err == nil || len(s.creds.Password) < 4 || !strings.Contains(err.Error(), s.creds.Password) {
		return err
	}
	return &scrubbedError{msg: strings.ReplaceAll(err.Error(), s.creds.Password, "<redacted>"), err: err}
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
func (s *session) connect(ctx context.Context, log logr.Logger) error {
	return s.retry(ctx, log, func(rctx context.Context) error {
		c, err := gofish.ConnectContext(rctx, gofish.ClientConfig{
			Endpoint:              s.ep.BaseURL(),
			HTTPClient:            s.hc,
			ReuseConnections:      true,
			NoModifyTransport:     true,
			MaxConcurrentRequests: int64(s.opts.MaxConnections),
		})
		if err != nil {
			return err
		}
		s.client = c.WithContext(context.WithoutCancel(rctx))
		return nil
	})
}

// serviceRootLinks is what bmckit reads from the service root.
type serviceRootLinks struct {
	Systems  schemas.Link
	Managers schemas.Link
	Links    struct {
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

// systemsURI is the Systems collection the service root names.
func (s *session) systemsURI() string {
	if root, err := parseServiceRoot(s.wire.serviceRoot()); err == nil && root.Systems != "" {
		return string(root.Systems)
	}
	return "/redfish/v1/Systems"
}

// managersURI is the Managers collection the service root names. Links are
// followed, never built by convention: HPE iLO's are lower-case
// ("/redfish/v1/managers/"). Only a root that names none gets the
// standard path.
func (s *session) managersURI() string {
	if root, err := parseServiceRoot(s.wire.serviceRoot()); err == nil && root.Managers != "" {
		return string(root.Managers)
	}
	return "/redfish/v1/Managers"
}

// logIn creates the session, or sets up basic auth when the service root
// names no Sessions collection.
func (s *session) logIn(ctx context.Context, log logr.Logger) error {
	root, err := parseServiceRoot(s.wire.serviceRoot())
	if err != nil {
		return bmc.Permanent(err)
	}
	s.sessionsURI = string(root.Links.Sessions)
	if s.sessionsURI == "" {
		log.V(1).Info("no SessionService; using basic auth")
		s.useBasic()
		return nil
	}
	s.wire.setLoginPath(s.sessionsURI)
	return s.createSession(ctx, log)
}

func (s *session) createSession(ctx context.Context, log logr.Logger) error {
	var token, location string
	err := s.retry(ctx, log, func(rctx context.Context) error {
		resp, err := s.client.WithContext(rctx).Post(s.sessionsURI, map[string]string{
			"UserName": s.creds.Username, "Password": s.creds.Password,
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
			log.Info("session creation not offered; using basic auth", "status", se.StatusCode)
			s.useBasic()
			return nil
		}
		return fmt.Errorf("create session as user %q: %w", s.creds.Username, err)
	}
	if token == "" {
		log.Info("session created without X-Auth-Token; using basic auth")
		s.useBasic()
		return nil
	}
	s.wire.setToken(token)
	s.wire.countsFor(ctx).logins.Add(1)
	s.mu.Lock()
	s.sessionURI = pathOf(location)
	s.mu.Unlock()
	return nil
}

// relogin logs in again after a call made under login gen was rejected.
// Of the callers whose calls the same expiry rejected, one logs in and the
// others wait for it and share its outcome; a caller whose login is already
// stale (someone logged in since) returns at once to repeat its request.
func (s *session) relogin(ctx context.Context, gen uint64, log logr.Logger) error {
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return errSessionClosed
		}
		if s.gen != gen {
			s.mu.Unlock()
			return nil
		}
		a := s.login
		if a == nil {
			break
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.done:
		}
		if a.err != nil && !a.canceled {
			return a.err
		}
		s.mu.Lock() // it succeeded (gen moved), or its caller gave up: look again
	}
	a := &loginAttempt{done: make(chan struct{})}
	s.login = a
	s.mu.Unlock()

	log.Info("session rejected (expired?); logging in again")
	err := s.createSession(ctx, log)

	s.mu.Lock()
	s.login = nil
	a.err, a.canceled = err, err != nil && ctx.Err() != nil
	if err == nil {
		s.gen++
	}
	var orphan string
	if err == nil && s.closed {
		// The owner closed the session meanwhile: end the new one too.
		orphan, s.sessionURI = s.sessionURI, ""
		err = errSessionClosed
	}
	close(a.done)
	s.mu.Unlock()
	if orphan != "" {
		s.logout(ctx, log, orphan)
	}
	return err
}

// close ends the session for every driver sharing it: later calls fail with
// errSessionClosed. The logout is attempted even with a cancelled ctx.
func (s *session) close(ctx context.Context, log logr.Logger) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	uri := s.sessionURI
	s.sessionURI = ""
	s.mu.Unlock()
	s.events.close()
	if uri != "" {
		s.logout(ctx, log, uri)
	}
	s.wire.countUnused(ctx)
	s.wire.CloseIdleConnections()
	s.release()
}

// forget drops the session's logout URI: the BMC restarted (ResetBMC) and
// forgot its sessions, so closing must not wait for a BMC that may be down.
// A later call is answered 401 and logs in again.
func (s *session) forget() {
	s.mu.Lock()
	s.sessionURI = ""
	s.mu.Unlock()
}

// abandon releases what a session that never logged in holds.
func (s *session) abandon() {
	s.wire.CloseIdleConnections()
	s.release()
}

func (s *session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *session) logout(ctx context.Context, log logr.Logger, uri string) {
	// BMCs allow few sessions (often 4-16) and keep an abandoned one for
	// its whole timeout, so the logout is attempted even when ctx is already
	// cancelled (a stopping runner), bounded by a short timeout of its own.
	timeout := min(s.opts.RequestTimeout, 5*time.Second)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if _, err := s.client.WithContext(rctx).Delete(uri); err != nil {
		log.V(1).Info("logout failed; the session will expire on the BMC", "error", classify(err).Error())
	}
}

// once runs fn with the request timeout and classifies its error.
func (s *session) once(ctx context.Context, fn func(rctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed() {
		return errSessionClosed
	}
	rctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	err := fn(rctx)
	if s.isClosed() {
		// Closed while this request ran: do not keep its connection.
		s.wire.CloseIdleConnections()
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), classify(err))
	}
	if rctx.Err() != nil {
		var bw *budget.WaitError
		if errors.As(err, &bw) {
			return bmc.Transient(fmt.Errorf("no turn in the endpoint's request budget within the request timeout %s (%s; raise Options.RequestsPerSecond if the BMC can take more): %w",
				s.opts.RequestTimeout, bw.Error(), context.DeadlineExceeded))
		}
		return bmc.Transient(fmt.Errorf("no answer within the request timeout %s: %w", s.opts.RequestTimeout, context.DeadlineExceeded))
	}
	return classify(err)
}

// retry runs fn, retrying transient failures Options.Retries times with
// doubling back-off.
func (s *session) retry(ctx context.Context, log logr.Logger, fn func(rctx context.Context) error) error {
	delay := s.opts.RetryDelay
	for attempt := 0; ; attempt++ {
		err := s.once(ctx, fn)
		if err == nil || attempt >= s.opts.Retries || !bmc.IsTransient(err) || ctx.Err() != nil || errors.Is(err, bmc.ErrSessionExpired) {
			return err
		}
		log.V(1).Info("transient failure; retrying", "attempt", attempt+1, "error", s.scrub(err).Error())
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		case <-s.opts.Clock.After(delay):
		}
		delay *= 2
	}
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

// sameService reports whether a and b reach the same Redfish service:
// protocol, transport, host and effective port.
func sameService(a, b bmc.Endpoint) bool {
	return a.Protocol == b.Protocol && transportOf(a) == transportOf(b) &&
		strings.EqualFold(a.Host, b.Host) && a.EffectivePort() == b.EffectivePort()
}

func transportOf(ep bmc.Endpoint) string {
	if ep.Transport == "" {
		return "https"
	}
	return ep.Transport
}
