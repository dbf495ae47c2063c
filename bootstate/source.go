package bootstate

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Errors of address binding and late signals (wrapped; use errors.Is).
var (
	// ErrSourceNotAllowed: the request came from an address the attempt
	// does not allow (StartOptions.AllowedSources). Nothing is written.
	ErrSourceNotAllowed = errors.New("source address not allowed for this boot attempt")
	// ErrAttemptEnded: the attempt already ended without booting (timed
	// out, or its deadline passed just now); the signal is not recorded.
	ErrAttemptEnded = errors.New("boot attempt already ended")
)

// ParseSources checks and normalizes allowed source addresses: each is an
// IP address ("10.0.0.7", "fd00::7") or a CIDR prefix ("10.0.0.0/24");
// IPv4-mapped IPv6 addresses are unmapped. It returns the canonical strings
// stored in the record.
func ParseSources(srcs []string) ([]string, error) {
	var out []string
	for i, s := range srcs {
		p, err := parseSource(s)
		if err != nil {
			return nil, fmt.Errorf("allowed source %d: %w", i, err)
		}
		out = append(out, p.String())
	}
	return out, nil
}

func parseSource(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%s is not an IP address or CIDR prefix", quoteTrunc(s))
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, fmt.Errorf("%s: an IPv4-mapped prefix shorter than /96", quoteTrunc(s))
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%s is not an IP address or CIDR prefix", quoteTrunc(s))
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// sourceAllowed reports whether src (an IP address as text) is within the
// allowed sources; with none, every source is.
func sourceAllowed(allowed []string, src string) bool {
	if len(allowed) == 0 {
		return true
	}
	a, err := netip.ParseAddr(src)
	if err != nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, s := range allowed {
		if p, err := parseSource(s); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr finds the address a request came from, for address binding.
type ClientAddr func(r *http.Request) string

// RemoteIP is the default [ClientAddr]: the IP of the TCP peer
// (r.RemoteAddr without the port). Behind a reverse proxy that is the
// proxy's address: give the handler and middleware a ClientAddr that reads
// the header your proxy sets, and only if the proxy overwrites it.
func RemoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
