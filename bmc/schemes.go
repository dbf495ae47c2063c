package bmc

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// SchemeDialer routes each endpoint to the Dialer registered for its
// protocol ("redfish", "ipmi", or a host's own). It is built by the host; there
// is no global registry.
//
// The zero value has no schemes. It is not safe to call Register concurrently
// with Dial; register everything before use.
type SchemeDialer struct {
	dialers map[string]Dialer
}

// Register sets the dialer for a protocol, e.g. "redfish" (covering
// redfish://, redfish+http:// and redfish+https://) or "ipmi".
func (s *SchemeDialer) Register(protocol string, d Dialer) {
	if s.dialers == nil {
		s.dialers = map[string]Dialer{}
	}
	s.dialers[strings.ToLower(protocol)] = d
}

// Dial implements [Dialer].
func (s *SchemeDialer) Dial(ctx context.Context, ep Endpoint, creds Credentials) (Driver, error) {
	d, ok := s.dialers[ep.Protocol]
	if !ok {
		known := make([]string, 0, len(s.dialers))
		for k := range s.dialers {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, &OpError{Op: "dial", Endpoint: ep.String(), Err: fmt.Errorf("no driver registered for protocol %q (registered: %s): %w", ep.Protocol, strings.Join(known, ", "), ErrNotSupported)}
	}
	return d.Dial(ctx, ep, creds)
}
