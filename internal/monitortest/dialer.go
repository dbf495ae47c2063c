package monitortest

import (
	"context"
	"sync"

	"github.com/bmckit/bmckit/bmc"
)

// CountingDialer wraps a bmc.Dialer and counts sessions: dials, how many
// are open, and the most open at once. Safe for concurrent use.
type CountingDialer struct {
	d bmc.Dialer

	mu                   sync.Mutex
	dials, open, maxOpen int
}

var _ bmc.Dialer = (*CountingDialer)(nil)

// NewCountingDialer counts the sessions d opens.
func NewCountingDialer(d bmc.Dialer) *CountingDialer { return &CountingDialer{d: d} }

// Dial implements bmc.Dialer; a failed dial is not counted.
func (c *CountingDialer) Dial(ctx context.Context, ep bmc.Endpoint, cr bmc.Credentials) (bmc.Driver, error) {
	drv, err := c.d.Dial(ctx, ep, cr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.dials++
	c.open++
	c.maxOpen = max(c.maxOpen, c.open)
	c.mu.Unlock()
	return &countedDriver{Driver: drv, c: c}, nil
}

// Counts returns the successful dials, the sessions open now (dialed and
// not closed) and the most that were open at once.
func (c *CountingDialer) Counts() (dials, open, maxOpen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials, c.open, c.maxOpen
}

type countedDriver struct {
	bmc.Driver
	c    *CountingDialer
	once sync.Once
}

func (d *countedDriver) Close(ctx context.Context) error {
	d.once.Do(func() {
		d.c.mu.Lock()
		d.c.open--
		d.c.mu.Unlock()
	})
	return d.Driver.Close(ctx)
}
