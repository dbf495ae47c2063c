package bmc

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Endpoint is a parsed BMC address. Build it with [ParseEndpoint]; hosts with
// their own protocols may fill it in directly and register a Dialer for their
// Protocol on a [SchemeDialer].
type Endpoint struct {
	// Protocol selects the driver: "redfish" or "ipmi".
	Protocol string
	// Transport is "https" or "http" for Redfish, empty for IPMI.
	Transport string
	// Host is a host name or IP address (IPv6 without brackets).
	Host string
	// Port is the explicit port, or 0 for the protocol's default.
	Port int
	// Path is the resource path, e.g. "/redfish/v1/Systems/1"; empty when the
	// URL named none (the driver picks the only system).
	Path string
	// Options are per-endpoint driver options from the URL's query, in
	// canonical form (url.Values.Encode: keys sorted, escaped), e.g.
	// "cipher=3&privilege=operator"; empty when the URL has none. Both
	// ipmi and redfish addresses take them (see packages bmc/ipmi and
	// bmc/redfish for the names, which differ per driver); ParseEndpoint
	// checks only the query's form (each name once, none empty), and the
	// driver parses the names and values, refusing any it does not know
	// with a permanent error naming the option. Options override the
	// Dialer's options for this address, and are part of the connection's
	// identity in connpool.Pool: two addresses of one system or endpoint
	// that differ in options never share a session.
	Options string
}

// Supported URL schemes:
//
//	redfish://host[:port][/redfish/v1/Systems/ID][?name=value&...]        Redfish over HTTPS
//	redfish+https://host[:port][/redfish/v1/Systems/ID][?name=value&...]  Redfish over HTTPS
//	redfish+http://host[:port][/redfish/v1/Systems/ID][?name=value&...]   Redfish over plain HTTP
//	ipmi://host[:port][?name=value&...]                                   IPMI v2.0 lanplus (port 623)
var schemes = map[string][2]string{
	"redfish":       {"redfish", "https"},
	"redfish+https": {"redfish", "https"},
	"redfish+http":  {"redfish", "http"},
	"ipmi":          {"ipmi", ""},
}

// ParseEndpoint parses a BMC URL in the Metal3 style (see the package docs).
// Errors name the offending part. Credentials in the URL are refused (pass
// them as [Credentials]), and the error never repeats them.
func ParseEndpoint(raw string) (Endpoint, error) {
	fail := func(format string, args ...any) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("bmc: invalid BMC address: "+format, args...)
	}
	s := strings.TrimSpace(raw)
	if s == "" {
		return fail("empty; want e.g. redfish://10.0.0.5/redfish/v1/Systems/1 or ipmi://10.0.0.5")
	}
	// Refuse '@' before parsing: a password holding '/', '?' or '#' makes
	// url.Parse split the URL inside the password, and the resulting port or
	// path error would echo part of it. No accepted BMC URL contains '@'.
	if strings.Contains(s, "@") {
		return fail("credentials in the URL are not accepted ('@' found); supply them as bmc.Credentials")
	}
	if !strings.Contains(s, "://") {
		return fail("want scheme://host, e.g. redfish://10.0.0.5")
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the raw URL, which may hold a password
		}
		return fail("%v", err)
	}
	if u.User != nil {
		return fail("credentials in the URL are not accepted; supply them as bmc.Credentials")
	}
	if u.Opaque != "" || !strings.Contains(s, "://") {
		return fail("want scheme://host, e.g. redfish://10.0.0.5")
	}
	scheme := strings.ToLower(u.Scheme)
	pt, ok := schemes[scheme]
	if !ok {
		return fail("unsupported scheme %q; supported: redfish, redfish+https, redfish+http, ipmi", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fail("missing host in %q", redactedScheme(scheme))
	}
	if strings.ContainsAny(host, " \t%") {
		return fail("invalid host %q", host)
	}
	if strings.Contains(host, ":") && !strings.HasPrefix(u.Host, "[") {
		return fail("IPv6 address %q must be in brackets, e.g. redfish://[fd00::5]:443", u.Host)
	}
	ep := Endpoint{Protocol: pt[0], Transport: pt[1], Host: host}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fail("invalid port %q: want 1-65535", p)
		}
		ep.Port = n
	} else if strings.HasSuffix(u.Host, ":") {
		return fail("empty port after %q", host)
	}
	if strings.Contains(s, "?") && !strings.Contains(s, "#") {
		if name := credentialOption(u.RawQuery); name != "" {
			return fail("credentials in the URL are not accepted (option %q); supply them as bmc.Credentials (in a job spec: credentialsRef)", name)
		}
		opts, err := parseOptions(u.RawQuery)
		if err != nil {
			return fail("%v", err)
		}
		ep.Options = opts
	} else if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, "?#") {
		return fail("query and fragment are not allowed")
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	switch ep.Protocol {
	case "ipmi":
		if path != "" {
			return fail("ipmi addresses take no path, got %q", path)
		}
	case "redfish":
		// The trailing slash is already trimmed: the Systems collection
		// itself means "no system named".
		if path == "/redfish/v1/Systems" {
			path = ""
		}
		if path != "" && !strings.HasPrefix(path, "/redfish/v1/Systems/") {
			return fail("redfish path %q: want /redfish/v1/Systems/ID or none", path)
		}
		ep.Path = path
	}
	return ep, nil
}

// parseOptions checks an options query (non-empty, each name once and
// non-empty) and returns it in canonical form. The names and values are the
// driver's to check.
func parseOptions(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("empty options query after '?'")
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return "", fmt.Errorf("options query: %v", err)
	}
	if len(vals) == 0 {
		return "", errors.New("empty options query after '?'")
	}
	for name, vs := range vals {
		if name == "" {
			return "", errors.New("options query: an option without a name")
		}
		if len(vs) > 1 {
			return "", fmt.Errorf("option %q given %d times", name, len(vs))
		}
	}
	return vals.Encode(), nil
}

func redactedScheme(s string) string { return s + "://" }

// credentialWords are the parts of an option name that mark it as a
// credential. No driver option contains one, so a URL that has one is
// refused before it is stored rather than at connect time (where the
// driver's "unknown option" error came too late: the value was already in
// the job record).
var credentialWords = []string{"pass", "pwd", "secret", "token", "user", "login", "auth", "cred", "key"}

// credentialOption returns the name (as written) of the first option in the
// raw query that looks like a credential, or "". Options that do not parse
// are left to parseOptions; the value is never looked at or returned.
func credentialOption(raw string) string {
	for part := range strings.SplitSeq(raw, "&") {
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		lower := strings.ToLower(name)
		if lower == "pw" || lower == "p" || lower == "u" {
			return name
		}
		for _, w := range credentialWords {
			if strings.Contains(lower, w) {
				return name
			}
		}
	}
	return ""
}

// DefaultPort is the port used when Port is 0.
func (e Endpoint) DefaultPort() int {
	switch {
	case e.Protocol == "ipmi":
		return 623
	case e.Transport == "http":
		return 80
	default:
		return 443
	}
}

// EffectivePort is Port, or DefaultPort when Port is 0.
func (e Endpoint) EffectivePort() int {
	if e.Port != 0 {
		return e.Port
	}
	return e.DefaultPort()
}

// HostPort is host:port with the effective port, IPv6 bracketed.
func (e Endpoint) HostPort() string {
	return net.JoinHostPort(e.Host, strconv.Itoa(e.EffectivePort()))
}

// Key identifies the physical BMC for locking: lower-case host and effective
// port, independent of protocol. Jobs whose endpoints share a Key never run at
// the same time.
func (e Endpoint) Key() string {
	var buf [96]byte
	return string(e.appendKey(buf[:0]))
}

// appendKey appends Key to b: what strings.ToLower(net.JoinHostPort(host,
// port)) gives, built in place because schedulers compute keys on every
// step (TestEndpointKeyMatchesJoinHostPort holds it to that).
func (e Endpoint) appendKey(b []byte) []byte {
	bracket := strings.IndexByte(e.Host, ':') >= 0
	if bracket {
		b = append(b, '[')
	}
	for i := 0; i < len(e.Host); i++ {
		c := e.Host[i]
		if c >= 0x80 {
			// Not ASCII: lower-case it the way strings.ToLower does.
			b = append(b[:len(b)-i], strings.ToLower(e.Host)...)
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	if bracket {
		b = append(b, ']')
	}
	b = append(b, ':')
	return strconv.AppendInt(b, int64(e.EffectivePort()), 10)
}

// SystemKey identifies the system a job acts on: [Endpoint.Key] (the BMC's
// lower-case host and effective port) followed by the Redfish system path
// ("10.0.0.5:443/redfish/v1/Systems/1"), or Key alone for protocols whose
// endpoint manages one system (IPMI). It is the one identity bmckit schedules
// by: at most one job acts on a SystemKey at a time, and connection pools
// share one session among the systems whose keys start with the same Key.
//
// An address that names no system path ("redfish://host") gets a key of its
// own, distinct from the key of the same system named by its path: address a
// system the same way in every job.
func (e Endpoint) SystemKey() string {
	var buf [160]byte
	return string(append(e.appendKey(buf[:0]), e.Path...))
}

// SystemID is the last segment of a Redfish system path, or "".
func (e Endpoint) SystemID() string {
	if e.Path == "" {
		return ""
	}
	return e.Path[strings.LastIndex(e.Path, "/")+1:]
}

// String renders the endpoint as a URL that [ParseEndpoint] accepts.
func (e Endpoint) String() string {
	scheme := e.Protocol
	if e.Protocol == "redfish" && e.Transport == "http" {
		scheme = "redfish+http"
	}
	host := e.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if e.Port != 0 {
		host = net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	}
	s := scheme + "://" + host + e.Path
	if e.Options != "" {
		s += "?" + e.Options
	}
	return s
}

// Redacted is the endpoint as messages and logs print it: String without
// the options query. Options are not secrets (ParseEndpoint refuses
// credential names), but a value a user typed where it does not belong
// should not be repeated in every error, condition and log line.
func (e Endpoint) Redacted() string {
	o := e.Options
	e.Options = ""
	s := e.String()
	if o != "" {
		s += "?…"
	}
	return s
}

// RedactURL returns raw, a BMC URL as a user wrote it, in a form safe to
// print: without user info, query or fragment (each replaced by "…"). It
// never fails, and over-redacts rather than under: everything up to the
// last '@' goes.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "", raw
	}
	// The last '@': a password may hold '@', '?' or '#' itself.
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = "…@" + rest[i+1:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i] + "…"
	}
	if ok {
		return scheme + "://" + rest
	}
	return rest
}

// BaseURL is the http(s)://host[:port] root for Redfish endpoints.
func (e Endpoint) BaseURL() string {
	t := e.Transport
	if t == "" {
		t = "https"
	}
	host := e.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if e.Port != 0 {
		host = net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	}
	return t + "://" + host
}
