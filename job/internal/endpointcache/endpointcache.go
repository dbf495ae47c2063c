// Package endpointcache caches parsed BMC addresses for package job: a
// job's address is parsed on every step.
package endpointcache

import (
	"sync"

	"github.com/bmckit/bmckit/bmc"
)

// Cache caches parsed BMC addresses, one per Stepper (and so per Runner):
// a job's address is parsed on every step, and url.Parse was a few percent
// of the Runner's CPU per task. It is bounded: it starts over when it
// reaches maxCachedEndpoints entries. The zero value is ready; safe for
// concurrent use.
type Cache struct {
	mu sync.RWMutex
	m  map[string]parsedEndpoint
}

type parsedEndpoint struct {
	ep  bmc.Endpoint
	err error
}

const maxCachedEndpoints = 1 << 17

// Parse is bmc.ParseEndpoint, cached.
func (c *Cache) Parse(raw string) (bmc.Endpoint, error) {
	c.mu.RLock()
	p, ok := c.m[raw]
	c.mu.RUnlock()
	if ok {
		return p.ep, p.err
	}
	ep, err := bmc.ParseEndpoint(raw)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedEndpoints {
		c.m = make(map[string]parsedEndpoint)
	}
	c.m[raw] = parsedEndpoint{ep, err}
	c.mu.Unlock()
	return ep, err
}
