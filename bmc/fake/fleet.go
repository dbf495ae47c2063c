package fake

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/bmckit/bmckit/bmc"
)

// Fleet is a [bmc.Dialer] over a set of fake BMCs keyed by address, so code
// under test can dial "redfish://10.0.0.1/redfish/v1/Systems/1" and reach the
// fake added under that URL. The zero value is not usable: call [NewFleet].
// Safe for concurrent use.
type Fleet struct {
	mu     sync.RWMutex
	bmcs   map[string]*BMC
	logins map[string]int // successful Dials by bmc.Endpoint.Key
}

var _ bmc.Dialer = (*Fleet)(nil)

// NewFleet returns an empty fleet.
func NewFleet() *Fleet { return &Fleet{bmcs: map[string]*BMC{}, logins: map[string]int{}} }

// fleetKey identifies a BMC independently of the scheme spelling: host and
// effective port (as [bmc.Endpoint.Key]) plus the system path, so
// "redfish://h" and "redfish+https://h:443" name the same fake while two
// systems behind one Redfish service stay apart.
func fleetKey(ep bmc.Endpoint) string {
	return ep.Key() + ep.Path
}

// lookup finds the BMC for ep; called with f.mu held. Without an exact
// match, an address with no system path matches the only BMC registered at
// that host and port, and an address with a path matches a BMC registered
// there without one, as a Redfish service with a single system would.
func (f *Fleet) lookup(ep bmc.Endpoint) *BMC { return f.lookupKey(ep, ep.Key()) }

// lookupKey is lookup with key = ep.Key().
func (f *Fleet) lookupKey(ep bmc.Endpoint, key string) *BMC {
	if b := f.bmcs[key+ep.Path]; b != nil {
		return b
	}
	if ep.Path != "" {
		return f.bmcs[key]
	}
	var found *BMC
	for k, b := range f.bmcs {
		if strings.HasPrefix(k, key+"/") {
			if found != nil {
				return nil // several systems: the address must name one
			}
			found = b
		}
	}
	return found
}

// Add registers b under the BMC address rawURL (any URL [bmc.ParseEndpoint]
// accepts). It fails when the URL is invalid or already taken.
func (f *Fleet) Add(rawURL string, b *BMC) error {
	if b == nil {
		return fmt.Errorf("fake: Fleet.Add(%q): nil BMC", rawURL)
	}
	ep, err := bmc.ParseEndpoint(rawURL)
	if err != nil {
		return fmt.Errorf("fake: Fleet.Add: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := fleetKey(ep)
	if _, ok := f.bmcs[k]; ok {
		return fmt.Errorf("fake: Fleet.Add: a BMC is already registered at %s", ep)
	}
	f.bmcs[k] = b
	return nil
}

// AddNew creates a BMC with opts, registers it under rawURL and returns it.
func (f *Fleet) AddNew(rawURL string, opts Options) (*BMC, error) {
	b := New(opts)
	if err := f.Add(rawURL, b); err != nil {
		return nil, err
	}
	return b, nil
}

// Get returns the BMC that a Dial of rawURL would reach, or nil.
func (f *Fleet) Get(rawURL string) *BMC {
	ep, err := bmc.ParseEndpoint(rawURL)
	if err != nil {
		return nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.lookup(ep)
}

// Dial implements [bmc.Dialer]: it opens a session on the BMC registered at
// ep (an address without a system path reaches the only BMC at that host
// and port; one with a path reaches a BMC registered without one). An
// unknown address fails with an error naming it and the registered ones;
// wrong credentials fail with an error wrapping [bmc.ErrUnauthorized]. The
// returned [*Driver] can open the other systems registered at the same host
// and port on its session ([Driver.OpenSystem]); [Fleet.Logins] counts the
// Dials per host and port.
func (f *Fleet) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	key := ep.Key()
	b, err := f.findKey(ep, key)
	if err != nil {
		return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: err}
	}
	d, err := b.dial(ctx, ep, f, creds)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.logins[key]++
	f.mu.Unlock()
	return d, nil
}

// find returns the BMC registered at ep, or an error naming ep and the
// registered addresses.
func (f *Fleet) find(ep bmc.Endpoint) (*BMC, error) { return f.findKey(ep, ep.Key()) }

// findKey is find with key = ep.Key().
func (f *Fleet) findKey(ep bmc.Endpoint, key string) (*BMC, error) {
	f.mu.RLock()
	b := f.lookupKey(ep, key)
	var known []string
	if b == nil {
		for k := range f.bmcs {
			known = append(known, k)
		}
	}
	f.mu.RUnlock()
	if b != nil {
		return b, nil
	}
	sort.Strings(known)
	list := strings.Join(known, ", ")
	if len(known) > 10 {
		list = strings.Join(known[:10], ", ") + ", ... (" + strconv.Itoa(len(known)) + " in all)"
	}
	if list == "" {
		list = "none"
	}
	return nil, bmc.Permanent(fmt.Errorf("fake: no BMC registered at %s (registered: %s)", fleetKey(ep), list))
}

// Logins counts the successful Dials (logins) through the fleet to any
// system at the host and port of rawURL (its path is ignored), so a test can
// check that the systems behind one endpoint shared a session: drivers from
// [Driver.OpenSystem] add none. It returns 0 for an invalid URL.
func (f *Fleet) Logins(rawURL string) int {
	ep, err := bmc.ParseEndpoint(rawURL)
	if err != nil {
		return 0
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.logins[ep.Key()]
}

// BMCs returns the registered BMCs keyed by host:port plus system path.
func (f *Fleet) BMCs() map[string]*BMC {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make(map[string]*BMC, len(f.bmcs))
	for k, v := range f.bmcs {
		out[k] = v
	}
	return out
}
