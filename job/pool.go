package job

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// ConnPool keeps BMC connections open across steps, keyed by endpoint and a
// hash of the credentials, so a controller that reconciles a job twenty times
// uses one BMC session, not twenty. A connection is closed when its job
// completes (Release), when the credentials for its endpoint change, or after
// it was idle for IdleTimeout. Safe for concurrent use.
type ConnPool struct {
	dialer      bmc.Dialer
	idleTimeout time.Duration
	now         func() time.Time

	mu    sync.Mutex
	conns map[string]*pooledConn // by endpoint string
}

type pooledConn struct {
	credsHash string
	drv       bmc.Driver
	lastUsed  time.Time
}

// NewConnPool returns a pool that dials with d. idleTimeout defaults to 2
// minutes; now defaults to time.Now.
func NewConnPool(d bmc.Dialer, idleTimeout time.Duration, now func() time.Time) *ConnPool {
	if idleTimeout <= 0 {
		idleTimeout = 2 * time.Minute
	}
	if now == nil {
		now = time.Now
	}
	return &ConnPool{dialer: d, idleTimeout: idleTimeout, now: now, conns: map[string]*pooledConn{}}
}

func credsHash(c bmc.Credentials) string {
	h := sha256.Sum256([]byte(c.Username + "\x00" + c.Password))
	return hex.EncodeToString(h[:])
}

// Get returns the open driver for ep, dialing if there is none or if the
// credentials changed (the old connection is closed first).
func (p *ConnPool) Get(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	key := ep.String()
	h := credsHash(creds)
	now := p.now()
	p.mu.Lock()
	stale := p.takeIdleLocked(now, key)
	c, ok := p.conns[key]
	if ok && c.credsHash != h {
		stale = append(stale, c.drv)
		delete(p.conns, key)
		ok = false
	}
	if ok {
		c.lastUsed = now
		p.mu.Unlock()
		closeAll(ctx, stale)
		return c.drv, nil
	}
	p.mu.Unlock()
	closeAll(ctx, stale)

	drv, err := p.dialer.Dial(ctx, ep, creds)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if other, ok := p.conns[key]; ok {
		// Someone dialed concurrently; keep theirs. (The runner never runs two
		// jobs on one BMC, so this only happens with hosts that do.)
		p.mu.Unlock()
		_ = drv.Close(context.WithoutCancel(ctx))
		return other.drv, nil
	}
	p.conns[key] = &pooledConn{credsHash: h, drv: drv, lastUsed: now}
	p.mu.Unlock()
	return drv, nil
}

// Release closes and forgets the connection for ep, if any.
func (p *ConnPool) Release(ctx context.Context, ep bmc.Endpoint) error {
	p.mu.Lock()
	c, ok := p.conns[ep.String()]
	delete(p.conns, ep.String())
	p.mu.Unlock()
	if !ok {
		return nil
	}
	// Log out even when the job's ctx is already done (a stopping runner),
	// or the BMC keeps the session until it times out; but bounded.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return c.drv.Close(ctx)
}

// CloseIdle closes connections idle for longer than the idle timeout.
// Get does this too; call it from a ticker if the pool may go unused.
func (p *ConnPool) CloseIdle(ctx context.Context) {
	p.mu.Lock()
	stale := p.takeIdleLocked(p.now(), "")
	p.mu.Unlock()
	closeAll(ctx, stale)
}

// Close closes every connection.
func (p *ConnPool) Close(ctx context.Context) error {
	p.mu.Lock()
	var all []bmc.Driver
	for k, c := range p.conns {
		all = append(all, c.drv)
		delete(p.conns, k)
	}
	p.mu.Unlock()
	closeAll(ctx, all)
	return nil
}

// Len is the number of open connections.
func (p *ConnPool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func (p *ConnPool) takeIdleLocked(now time.Time, except string) []bmc.Driver {
	var stale []bmc.Driver
	for k, c := range p.conns {
		if k != except && now.Sub(c.lastUsed) > p.idleTimeout {
			stale = append(stale, c.drv)
			delete(p.conns, k)
		}
	}
	return stale
}

func closeAll(ctx context.Context, ds []bmc.Driver) {
	if len(ds) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, d := range ds {
		_ = d.Close(ctx)
	}
}
