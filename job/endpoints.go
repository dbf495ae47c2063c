package job

import (
	"sync"

	"github.com/bmckit/bmckit/bmc"
)

// endpoints caches parsed BMC addresses: a job's address is parsed on every
// step, and url.Parse was a few percent of the Runner's CPU per task. The
// cache is bounded: it starts over when it reaches maxCachedEndpoints.
var endpoints endpointCache

const maxCachedEndpoints = 1 << 17

type endpointCache struct {
	mu sync.RWMutex
	m  map[string]parsedEndpoint
}

type parsedEndpoint struct {
	ep  bmc.Endpoint
	err error
}

// parseEndpoint is bmc.ParseEndpoint, cached.
func parseEndpoint(raw string) (bmc.Endpoint, error) {
	c := &endpoints
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
