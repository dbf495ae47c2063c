// Package connpool keeps BMC connections open across calls: one session
// per system, shared by the systems behind one endpoint where the driver can
// ([bmc.SystemOpener]), closed when idle, when the credentials change, or
// when their user releases them. The job package's Stepper and Runner and
// package monitor each use one; a host that makes its own BMC calls beside
// them can too. It knows nothing of jobs: a "user" is any string naming who
// holds a system's connection (a job's name), so that a release by a user
// that no longer holds it is ignored.
package connpool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Pool keeps BMC connections open across calls, so a controller that
// reconciles a job twenty times uses one BMC session, not twenty.
//
// Connections are kept per system ([bmc.Endpoint.SystemKey], the identity
// locks use too). Systems behind one endpoint share one session per
// credentials version when the driver implements [bmc.SystemOpener]: the first
// system dials (logs in), the others open views on that session, so fifty
// jobs on fifty systems of one chassis manager cost one login. A system's
// connection is closed when its user is done with it (Release), when the credentials
// for it change, or after it was idle for IdleTimeout; a session is logged out
// when no system uses it any more. Safe for concurrent use; concurrent Gets
// that need the same new session wait for one dial.
type Pool struct {
	dialer      bmc.Dialer
	idleTimeout time.Duration
	now         func() time.Time

	mu        sync.Mutex
	systems   map[string]*sysConn // by SystemKey
	sessions  map[string]*session // shareable sessions by sessionKey
	nextSweep time.Time
	// The last credentials and options getFor saw, and their version
	// (versionLocked).
	lastCreds   bmc.Credentials
	lastOptions string
	lastVersion string

	// wire, if set, receives what each session cost on the wire since it
	// was last reported (SetWire; the job package's Observer.Wire); wireSeen
	// holds, per driver (a session's owner and each view on it, which
	// count their own calls), what was reported so far.
	wire     func(protocol, endpoint string, delta bmc.Stats)
	wireSeen map[bmc.Driver]wireSeen
}

// session is one dialed driver (one login). owner is the driver the dialer
// returned, for the system ownerSys; other systems use views opened from it.
type session struct {
	key      string // sessionKey; "" for a session that is not shared
	owner    bmc.Driver
	ownerSys string
	refs     int           // systems using it
	ready    chan struct{} // closed once the dial ended
	err      error         // the dial's error
	dead     bool          // closed, or being closed
}

type sysConn struct {
	sess      *session
	drv       bmc.Driver // a view, or sess.owner for the owner's system
	credsHash string
	lastUsed  time.Time
	user      string // the job that last got it
}

// New returns a pool that dials with d. idleTimeout defaults to 2
// minutes; now defaults to time.Now.
func New(d bmc.Dialer, idleTimeout time.Duration, now func() time.Time) *Pool {
	if idleTimeout <= 0 {
		idleTimeout = 2 * time.Minute
	}
	if now == nil {
		now = time.Now
	}
	return &Pool{dialer: d, idleTimeout: idleTimeout, now: now, systems: map[string]*sysConn{}, sessions: map[string]*session{}}
}

func credsHash(c bmc.Credentials) string {
	h := sha256.Sum256([]byte(c.Username + "\x00" + c.Password))
	return hex.EncodeToString(h[:])
}

// versionLocked returns credsHash(creds) + "|" + options, remembering the
// last one: most steps of a runner use the same credentials and options,
// and hashing them on every step was ~5% of the Runner's CPU. Callers hold
// p.mu.
func (p *Pool) versionLocked(creds bmc.Credentials, options string) string {
	if p.lastVersion == "" || creds.Username != p.lastCreds.Username || creds.Password != p.lastCreds.Password || options != p.lastOptions {
		p.lastCreds = bmc.Credentials{Username: creds.Username, Password: creds.Password}
		p.lastOptions = options
		p.lastVersion = credsHash(creds) + "|" + options
	}
	return p.lastVersion
}

// sessionKey: systems with equal keys may share a session.
func sessionKey(ep bmc.Endpoint, credsHash string) string {
	return ep.Protocol + "|" + ep.Transport + "|" + ep.Key() + "|" + credsHash
}

// Get returns the open driver for ep's system, dialing (or opening a view on
// the endpoint's session) if there is none, and closing the old connection
// first if the credentials changed.
func (p *Pool) Get(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	drv, _, err := p.GetFor(ctx, ep, creds, "")
	return drv, err
}

// GetFor is Get on behalf of user (a job's name), recorded so that ReleaseFor by a job
// that no longer uses the system cannot close the connection of the job that
// does. fresh is true when the driver was dialed or opened by this call:
// everything it counted on the wire (bmc.StatsReporter) was for user.
//
// Each round decides under the lock (next) and acts outside it: connections
// it replaced are closed, then it returns the system's connection, waits for
// a dial in flight, dials, or opens a view on the endpoint's session.
func (p *Pool) GetFor(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials, user string) (drv bmc.Driver, fresh bool, err error) {
	now := p.now()
	for {
		p.mu.Lock()
		n := p.nextLocked(ep, creds, user, now)
		p.mu.Unlock()
		p.closeAll(ctx, n.stale)
		switch {
		case n.drv != nil:
			return n.drv, false, nil
		case n.wait != nil:
			select {
			case <-n.wait:
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
		case n.dial != nil:
			return p.dial(ctx, n.dial, ep, creds, n.version, user)
		default:
			return p.openView(ctx, n.view, ep, creds, n.version, user, now)
		}
	}
}

// poolStep is what getFor does next: return drv, wait for a dial in flight,
// dial session dial, or open a view on session view; after closing stale.
type poolStep struct {
	stale   []bmc.Driver
	version string // the connection's version (versionLocked)
	drv     bmc.Driver
	wait    <-chan struct{}
	dial    *session
	view    *session
}

// nextLocked decides getFor's next step. The connection's version is the
// credentials and the address's options (e.g. ipmi://host?cipher=3): a
// change of either dials again, and addresses that differ in options never
// share a session. Callers hold p.mu.
func (p *Pool) nextLocked(ep bmc.Endpoint, creds bmc.Credentials, user string, now time.Time) poolStep {
	sys := ep.SystemKey()
	n := poolStep{version: p.versionLocked(creds, ep.Options), stale: p.sweepLocked(now)}
	if c := p.systems[sys]; c != nil {
		if c.credsHash == n.version && !c.sess.dead {
			c.lastUsed = now
			if user != "" {
				// A Get on behalf of no job (a monitor's read) must not
				// take the connection away from the job using it.
				c.user = user
			}
			n.drv = c.drv
			return n
		}
		n.stale = append(n.stale, p.dropLocked(sys)...)
	}
	skey := sessionKey(ep, n.version)
	for {
		s := p.sessions[skey]
		switch {
		case s == nil:
			// Dial a new session; concurrent Gets for this endpoint wait.
			n.dial = &session{key: skey, ready: make(chan struct{})}
			p.sessions[skey] = n.dial
			return n
		case !isClosed(s.ready):
			n.wait = s.ready
			return n
		case s.dead || s.err != nil:
			if p.sessions[skey] == s {
				delete(p.sessions, skey)
			}
			continue
		case s.ownerSys == sys:
			s.refs++
			p.systems[sys] = &sysConn{sess: s, drv: s.owner, credsHash: n.version, lastUsed: now, user: user}
			n.drv = s.owner // it counted the dial and earlier jobs' calls
			return n
		}
		if _, ok := s.owner.(bmc.SystemOpener); !ok {
			// This driver has one session per system: dial one of its own,
			// not shared.
			n.dial = &session{ready: make(chan struct{})}
			return n
		}
		s.refs++ // keeps the session open while the view is opened
		n.view = s
		return n
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// openView opens a view for ep's system on session s (whose reference
// nextLocked took) and installs it as the system's connection.
func (p *Pool) openView(ctx context.Context, s *session, ep bmc.Endpoint, creds bmc.Credentials, h, user string, now time.Time) (bmc.Driver, bool, error) {
	view, err := s.owner.(bmc.SystemOpener).OpenSystem(ctx, ep)
	p.mu.Lock()
	if err != nil {
		stale := p.unrefLocked(s)
		p.mu.Unlock()
		p.closeAll(ctx, stale)
		if errors.Is(err, bmc.ErrNotSupported) {
			return p.dial(ctx, &session{ready: make(chan struct{})}, ep, creds, h, user)
		}
		return nil, false, err
	}
	if s.dead {
		p.mu.Unlock()
		p.closeAll(ctx, []bmc.Driver{view})
		return nil, false, bmc.Transient(errors.New("the BMC session was closed while opening the system; retry"))
	}
	sys := ep.SystemKey()
	var stale []bmc.Driver
	if p.systems[sys] != nil {
		stale = p.dropLocked(sys) // a concurrent Get for the same system
	}
	p.systems[sys] = &sysConn{sess: s, drv: view, credsHash: h, lastUsed: now, user: user}
	if p.wire != nil {
		p.wireSeen[view] = wireSeen{proto: ep.Protocol, endpoint: ep.Key()}
	}
	p.mu.Unlock()
	p.closeAll(ctx, stale)
	return view, true, nil
}

// dial fills in session s (registered in p.sessions under s.key when it is
// shared) and installs it as ep's system connection.
func (p *Pool) dial(ctx context.Context, s *session, ep bmc.Endpoint, creds bmc.Credentials, h, user string) (bmc.Driver, bool, error) {
	drv, err := p.dialer.Dial(ctx, ep, creds)
	p.mu.Lock()
	defer close(s.ready)
	if err != nil {
		s.err = err
		if s.key != "" && p.sessions[s.key] == s {
			delete(p.sessions, s.key)
		}
		p.mu.Unlock()
		p.reportDialError(ep, err)
		return nil, false, err
	}
	sys := ep.SystemKey()
	s.owner, s.ownerSys, s.refs = drv, sys, 1
	if p.wire != nil {
		p.wireSeen[drv] = wireSeen{proto: ep.Protocol, endpoint: ep.Key()}
	}
	var stale []bmc.Driver
	if p.systems[sys] != nil {
		stale = p.dropLocked(sys) // a concurrent Get for the same system
	}
	p.systems[sys] = &sysConn{sess: s, drv: drv, credsHash: h, lastUsed: p.now(), user: user}
	p.mu.Unlock()
	p.closeAll(ctx, stale)
	return drv, true, nil
}

// Release closes and forgets the connection for ep's system, if any; the
// endpoint's session is logged out when no other system uses it.
func (p *Pool) Release(ctx context.Context, ep bmc.Endpoint) error {
	p.ReleaseFor(ctx, ep, "")
	return nil
}

// ReleaseFor is Release, but only if user (or anyone, for "") was the
// last to get the connection. It returns what closing cost on the wire
// beyond the system's own driver: the logout of the shared session this
// release ended, which its owner (another system's driver) counts.
func (p *Pool) ReleaseFor(ctx context.Context, ep bmc.Endpoint, user string) bmc.Stats {
	sys := ep.SystemKey()
	p.mu.Lock()
	c := p.systems[sys]
	if c == nil || (user != "" && c.user != "" && c.user != user) {
		p.mu.Unlock()
		return bmc.Stats{}
	}
	stale := p.dropLocked(sys)
	p.mu.Unlock()
	return p.closeCounting(ctx, stale, c.drv)
}

// Invalidate closes the whole session ep's system uses, for every system
// sharing it: the session is spent (expired, or its login failed), so the
// next Get dials again.
func (p *Pool) Invalidate(ctx context.Context, ep bmc.Endpoint) {
	p.mu.Lock()
	c := p.systems[ep.SystemKey()]
	if c == nil {
		p.mu.Unlock()
		return
	}
	s := c.sess
	var stale []bmc.Driver
	for k, o := range p.systems {
		if o.sess == s {
			stale = append(stale, p.dropLocked(k)...)
		}
	}
	p.mu.Unlock()
	p.closeAll(ctx, stale)
}

// dropLocked forgets sys's connection and returns the drivers to close: its
// view, and the session's owner when no system uses the session any more.
func (p *Pool) dropLocked(sys string) []bmc.Driver {
	c := p.systems[sys]
	if c == nil {
		return nil
	}
	delete(p.systems, sys)
	var out []bmc.Driver
	if c.drv != c.sess.owner {
		out = append(out, c.drv)
	}
	return append(out, p.unrefLocked(c.sess)...)
}

func (p *Pool) unrefLocked(s *session) []bmc.Driver {
	s.refs--
	if s.refs > 0 {
		return nil
	}
	s.dead = true
	if s.key != "" && p.sessions[s.key] == s {
		delete(p.sessions, s.key)
	}
	return []bmc.Driver{s.owner}
}

// CloseIdle closes connections idle for longer than the idle timeout.
// Get does this too (at most twice per idle timeout, so Get stays cheap with
// many connections); call it from a ticker if the pool may go unused.
func (p *Pool) CloseIdle(ctx context.Context) {
	p.mu.Lock()
	p.nextSweep = time.Time{}
	stale := p.sweepLocked(p.now())
	p.mu.Unlock()
	p.closeAll(ctx, stale)
}

func (p *Pool) sweepLocked(now time.Time) []bmc.Driver {
	if now.Before(p.nextSweep) {
		return nil
	}
	p.nextSweep = now.Add(p.idleTimeout / 2)
	var stale []bmc.Driver
	for k, c := range p.systems {
		if now.Sub(c.lastUsed) > p.idleTimeout {
			stale = append(stale, p.dropLocked(k)...)
		}
	}
	return stale
}

// Close closes every connection.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	var all []bmc.Driver
	for k := range p.systems {
		all = append(all, p.dropLocked(k)...)
	}
	p.mu.Unlock()
	p.closeAll(ctx, all)
	return nil
}

// Len is the number of systems with an open connection.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.systems)
}

// closeAll closes drivers, views before the sessions they share (callers
// list them in that order). Logouts are attempted even when ctx is done (a
// stopping runner), or the BMC keeps the session until it times out, but
// bounded.
func (p *Pool) closeAll(ctx context.Context, ds []bmc.Driver) {
	p.closeCounting(ctx, ds, nil)
}

// closeCounting is closeAll, and returns what closing the drivers other
// than own cost on the wire (bmc.StatsReporter): nobody else uses them, so
// what they count meanwhile is their Close.
func (p *Pool) closeCounting(ctx context.Context, ds []bmc.Driver, own bmc.Driver) bmc.Stats {
	var cost bmc.Stats
	if len(ds) == 0 {
		return cost
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, d := range ds {
		if d == nil {
			continue
		}
		sr, counts := d.(bmc.StatsReporter)
		counts = counts && d != own
		var before bmc.Stats
		if counts {
			before = sr.Stats()
		}
		_ = d.Close(ctx)
		if counts {
			cost = cost.Add(sr.Stats().Since(before))
		}
		p.reportClosed(d)
	}
	return cost
}

// wireSeen is what was reported of one driver's traffic.
type wireSeen struct {
	proto, endpoint string
	st              bmc.Stats
}

// SetWire turns on wire accounting, before the pool is used: f receives
// what each system's driver cost on the wire since it was last reported
// (by ReportWire, and when a driver is closed), its protocol and endpoint key.
func (p *Pool) SetWire(f func(protocol, endpoint string, delta bmc.Stats)) {
	p.wire, p.wireSeen = f, map[bmc.Driver]wireSeen{}
}

// ReportWire reports the traffic of ep's system's driver since it was last
// reported. Drivers that share a session count their own calls (the
// owner also the login and logout), so each request is counted once.
func (p *Pool) ReportWire(ep bmc.Endpoint) {
	if p.wire == nil {
		return
	}
	p.mu.Lock()
	c := p.systems[ep.SystemKey()]
	var drv bmc.Driver
	if c != nil {
		drv = c.drv
	}
	p.mu.Unlock()
	if drv != nil {
		p.reportDriver(drv)
	}
}

// reportDriver reports drv's traffic since the last report; the driver is
// read outside the pool's lock, and concurrent reports never count a
// request twice (what was seen only grows).
func (p *Pool) reportDriver(drv bmc.Driver) {
	sr, ok := drv.(bmc.StatsReporter)
	if !ok {
		return
	}
	st := sr.Stats()
	p.mu.Lock()
	seen, ok := p.wireSeen[drv]
	if !ok {
		p.mu.Unlock()
		return
	}
	d := st.Since(seen.st)
	seen.st = st.Max(seen.st)
	p.wireSeen[drv] = seen
	p.mu.Unlock()
	if d != (bmc.Stats{}) {
		p.wire(seen.proto, seen.endpoint, d)
	}
}

// reportClosed reports a closed driver's last traffic (a session's logout)
// and forgets it.
func (p *Pool) reportClosed(d bmc.Driver) {
	if p.wire == nil {
		return
	}
	p.reportDriver(d)
	p.mu.Lock()
	delete(p.wireSeen, d)
	p.mu.Unlock()
}

// reportDialError reports the traffic of a failed dial that counts it.
func (p *Pool) reportDialError(ep bmc.Endpoint, err error) {
	var sr bmc.StatsReporter
	if p.wire == nil || !errors.As(err, &sr) {
		return
	}
	if st := sr.Stats(); st != (bmc.Stats{}) {
		p.wire(ep.Protocol, ep.Key(), st)
	}
}
