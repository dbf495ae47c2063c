package bmc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// BootOrderManager is implemented by drivers that can read and change the
// system's persistent boot order (Redfish: Boot.BootOrder, the BootOptions
// collection and Boot.HttpBootUri). A BMC without it fails every method
// with an error wrapping [ErrNotSupported] ([CapabilityBootOrder]), having
// sent no request that changes state. Methods are safe for concurrent use.
// The driver never reboots. See docs/secure-boot-boot-order.md.
type BootOrderManager interface {
	// BootOrder reads the boot order, the boot options and the HTTP boot
	// URI, current and pending. It changes nothing.
	BootOrder(ctx context.Context) (BootOrder, error)

	// SetBootOrder requests c. It validates c against what it read
	// ([ValidateBootOrderChange]) and sends nothing when c is invalid. It
	// is idempotent: what the next boot already brings
	// ([BootOrder.Next]) is not sent again; with nothing left it sends
	// nothing. It reads back; a requested value the BMC neither applied
	// nor holds pending fails the call. It returns the state read back:
	// [BootOrder.RebootRequired] says whether a boot must follow. Callers
	// verify after that boot with [BootOrderChange.Differing].
	SetBootOrder(ctx context.Context, c BootOrderChange) (BootOrder, error)
}

// BootOption is one UEFI boot option (Redfish BootOption).
//
// +kubebuilder:object:generate=true
type BootOption struct {
	// Reference is the BootOptionReference, e.g. Boot0001: what
	// BootOrder.Order lists.
	Reference string `json:"reference"`
	// ID is the resource's Id on the BMC, when it differs from Reference.
	ID string `json:"id,omitempty"`
	// DisplayName is what the firmware shows, e.g. "UEFI PXEv4 (MAC:...)".
	DisplayName string `json:"displayName,omitempty"`
	// Alias is the Redfish boot source the option is, e.g. Pxe, Hdd,
	// UefiHttp, Cd; empty when the BMC does not say.
	Alias string `json:"alias,omitempty"`
	// Enabled is BootOptionEnabled: a disabled option is skipped at boot.
	Enabled bool `json:"enabled"`
	// PendingEnabled is the enablement the next boot brings, when it
	// differs from Enabled; nil when none.
	PendingEnabled *bool `json:"pendingEnabled,omitempty"`
	// UefiDevicePath is the UEFI device path, e.g.
	// PciRoot(0x4)/Pci(0x4,0x0)/Pci(0x0,0x0)/MAC(6805CAE1367C,0x1)/IPv4(0.0.0.0).
	UefiDevicePath string `json:"uefiDevicePath,omitempty"`
}

// MAC returns the MAC address a network option's UEFI device path names
// (its MAC(...) node), lower case with colons; "" when it names none, or
// the node does not hold 6 bytes of hexadecimal.
func (o BootOption) MAC() string { return DevicePathMAC(o.UefiDevicePath) }

// DevicePathMAC returns the MAC address of the first MAC(hex,type) node of
// a UEFI device path (text form, UEFI 2.10 section 10.6.1.6), lower case
// with colons; "" when there is none or it is not 6 bytes (12 hex digits;
// a node padded to 32 bytes with zeros, as some firmware prints it, is
// cut to its first 6).
func DevicePathMAC(path string) string {
	// ASCII case folding byte by byte: strings.ToUpper may change the
	// length of other text, and the index would no longer be path's.
	i := -1
	for j := 0; j+4 <= len(path); j++ {
		if strings.EqualFold(path[j:j+4], "MAC(") {
			i = j
			break
		}
	}
	if i < 0 {
		return ""
	}
	rest := path[i+4:]
	end := strings.IndexAny(rest, ",)")
	if end < 0 {
		return ""
	}
	hex := strings.ToLower(rest[:end])
	if len(hex) > 12 && strings.Trim(hex[12:], "0") == "" {
		hex = hex[:12]
	}
	if len(hex) != 12 {
		return ""
	}
	var b strings.Builder
	for j := 0; j < 12; j += 2 {
		c1, c2 := hex[j], hex[j+1]
		if !isHex(c1) || !isHex(c2) {
			return ""
		}
		if j > 0 {
			b.WriteByte(':')
		}
		b.WriteByte(c1)
		b.WriteByte(c2)
	}
	return b.String()
}

func isHex(c byte) bool { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') }

// BootOrder is what [BootOrderManager.BootOrder] reads.
//
// +kubebuilder:object:generate=true
type BootOrder struct {
	// Order is the persistent boot order (Redfish Boot.BootOrder): boot
	// option references, the first boots first.
	Order []string `json:"order"`
	// PendingOrder is the order the next boot brings, when it differs from
	// Order; nil when none.
	PendingOrder []string `json:"pendingOrder,omitempty"`
	// Options are the boot options (Redfish BootOptions), at most
	// MaxBootOptions.
	Options []BootOption `json:"options,omitempty"`
	// HTTPBootURI is the UEFI HTTP boot URI (Redfish Boot.HttpBootUri);
	// nil when the BMC has none, "" when it has one that is empty.
	HTTPBootURI *string `json:"httpBootURI,omitempty"`
	// PendingHTTPBootURI is the URI the next boot brings, when it differs
	// from HTTPBootURI; nil when none.
	PendingHTTPBootURI *string `json:"pendingHTTPBootURI,omitempty"`
}

// MaxBootOptions bounds BootOrder.Options and BootOrder.Order; MaxBootString
// bounds each string a driver reports there (cut at a rune boundary).
const (
	MaxBootOptions = 64
	MaxBootString  = 512
)

// Bound cuts b to MaxBootOptions options and order entries and every string
// to MaxBootString bytes, and reports whether it cut anything. Drivers call
// it before they return, so what a task stores is bounded.
func (b *BootOrder) Bound() bool {
	cut := false
	clip := func(s *string) {
		if s != nil && len(*s) > MaxBootString {
			*s, cut = clipRunes(*s, MaxBootString), true
		}
	}
	clipList := func(l *[]string) {
		if len(*l) > MaxBootOptions {
			*l, cut = (*l)[:MaxBootOptions], true
		}
		for i := range *l {
			clip(&(*l)[i])
		}
	}
	clipList(&b.Order)
	clipList(&b.PendingOrder)
	if len(b.Options) > MaxBootOptions {
		b.Options, cut = b.Options[:MaxBootOptions], true
	}
	for i := range b.Options {
		o := &b.Options[i]
		for _, s := range []*string{&o.Reference, &o.ID, &o.DisplayName, &o.Alias, &o.UefiDevicePath} {
			clip(s)
		}
	}
	clip(b.HTTPBootURI)
	clip(b.PendingHTTPBootURI)
	return cut
}

// clipRunes cuts s to at most n bytes at a rune boundary.
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }

// Option returns the option whose Reference is ref.
func (b BootOrder) Option(ref string) (BootOption, bool) {
	for _, o := range b.Options {
		if o.Reference == ref {
			return o, true
		}
	}
	return BootOption{}, false
}

// Next is the state once the pending values apply: what the next boot
// brings.
func (b BootOrder) Next() BootOrder {
	n := b
	if b.PendingOrder != nil {
		n.Order, n.PendingOrder = b.PendingOrder, nil
	}
	if b.PendingHTTPBootURI != nil {
		n.HTTPBootURI, n.PendingHTTPBootURI = b.PendingHTTPBootURI, nil
	}
	n.Options = make([]BootOption, len(b.Options))
	for i, o := range b.Options {
		if o.PendingEnabled != nil {
			o.Enabled, o.PendingEnabled = *o.PendingEnabled, nil
		}
		n.Options[i] = o
	}
	return n
}

// RebootRequired reports whether anything is pending for the next boot.
func (b BootOrder) RebootRequired() bool {
	if b.PendingOrder != nil || b.PendingHTTPBootURI != nil {
		return true
	}
	for _, o := range b.Options {
		if o.PendingEnabled != nil {
			return true
		}
	}
	return false
}

// NetworkOptions returns the references of the options that boot from the
// network interface with MAC address mac (any case and separators; ""
// matches every interface) and whose Alias is alias (e.g. "Pxe",
// "UefiHttp"; "" matches any), in their order in Options: "PXE on this
// interface". Options whose device path names no MAC do not match a mac.
func (b BootOrder) NetworkOptions(mac, alias string) []string {
	want := normalizeMAC(mac)
	var out []string
	for _, o := range b.Options {
		if alias != "" && !strings.EqualFold(o.Alias, alias) {
			continue
		}
		if want != "" && o.MAC() != want {
			continue
		}
		out = append(out, o.Reference)
	}
	return out
}

// normalizeMAC is mac in lower case with colons, whatever its separators
// ("68-05-CA-E1-36-7C", "6805.cae1.367c"); "" for "".
func normalizeMAC(mac string) string {
	var hex []byte
	for i := 0; i < len(mac); i++ {
		c := mac[i]
		if c >= 'A' && c <= 'F' {
			c += 'a' - 'A'
		}
		if isHex(c) {
			hex = append(hex, c)
		}
	}
	if len(hex) == 0 {
		return ""
	}
	return DevicePathMAC("MAC(" + string(hex) + ",0x1)")
}

// BootOrderChange is what [BootOrderManager.SetBootOrder] requests. Fields
// left empty are not changed.
//
// +kubebuilder:object:generate=true
type BootOrderChange struct {
	// Order are the references to boot first, in this order; the other
	// options keep their relative order after them (CompleteBootOrder).
	Order []string `json:"order,omitempty"`
	// Enabled sets BootOptionEnabled, by reference.
	Enabled map[string]bool `json:"enabled,omitempty"`
	// HTTPBootURI sets the UEFI HTTP boot URI (an absolute http or https
	// URL).
	HTTPBootURI *string `json:"httpBootURI,omitempty"`
}

// IsZero reports whether c changes nothing.
func (c BootOrderChange) IsZero() bool {
	return len(c.Order) == 0 && len(c.Enabled) == 0 && c.HTTPBootURI == nil
}

// Differing returns, sorted, what of c the state b does not show: "order"
// when b.Order does not start with c.Order, "enabled:<ref>" for each option
// whose Enabled differs (or that b does not list), "httpBootURI". Empty when
// b shows all of c. Pass b.Next() to ask what the next boot brings.
func (c BootOrderChange) Differing(b BootOrder) []string {
	var out []string
	if len(c.Order) > 0 && (len(b.Order) < len(c.Order) || !slices.Equal(b.Order[:len(c.Order)], c.Order)) {
		out = append(out, "order")
	}
	for _, ref := range slices.Sorted(maps.Keys(c.Enabled)) {
		if o, ok := b.Option(ref); !ok || o.Enabled != c.Enabled[ref] {
			out = append(out, "enabled:"+ref)
		}
	}
	if c.HTTPBootURI != nil && (b.HTTPBootURI == nil || *b.HTTPBootURI != *c.HTTPBootURI) {
		out = append(out, "httpBootURI")
	}
	return out
}

// CompleteBootOrder is the whole order a BMC is sent for first: the
// references of first, then those of cur not among them, in cur's order.
func CompleteBootOrder(cur, first []string) []string {
	out := slices.Clone(first)
	for _, r := range cur {
		if !slices.Contains(first, r) {
			out = append(out, r)
		}
	}
	return out
}

// ErrInvalidBootOrder is wrapped by every error of ValidateBootOrderChange.
var ErrInvalidBootOrder = errors.New("invalid boot order change")

// ValidateBootOrderChange checks c against the state b without any
// request: it refuses an empty change, an Order or Enabled reference that
// is not one of b's options (or, when the BMC lists no options, not in
// b.Order), a reference given twice in Order, and an HTTP boot URI that is
// not an absolute http or https URL or that carries user info (a password
// would be stored with the job; messages show the URI redacted). An HTTP boot URI for a BMC without one
// (b.HTTPBootURI nil) fails with an error wrapping [ErrNotSupported]
// instead. Every other error wraps [ErrInvalidBootOrder], names the field
// and the value (quoted and cut), and is permanent.
func ValidateBootOrderChange(b BootOrder, c BootOrderChange) error {
	bad := func(format string, args ...any) error {
		return Permanent(fmt.Errorf("%w: "+format, append([]any{ErrInvalidBootOrder}, args...)...))
	}
	if c.IsZero() {
		return bad("nothing to change (no order, enabled or httpBootURI)")
	}
	known := func(ref string) bool {
		if len(b.Options) == 0 {
			return slices.Contains(b.Order, ref)
		}
		_, ok := b.Option(ref)
		return ok
	}
	refs := func() string {
		var rs []string
		for _, o := range b.Options {
			rs = append(rs, o.Reference)
		}
		if len(rs) == 0 {
			rs = b.Order
		}
		return quoteList(rs)
	}
	seen := map[string]bool{}
	for i, ref := range c.Order {
		if seen[ref] {
			return bad("order[%d] %s is given twice", i, quoteClip(ref))
		}
		seen[ref] = true
		if !known(ref) {
			return bad("order[%d] %s is not a boot option of this system; it has %s", i, quoteClip(ref), refs())
		}
	}
	for _, ref := range slices.Sorted(maps.Keys(c.Enabled)) {
		if !known(ref) || len(b.Options) == 0 {
			if len(b.Options) == 0 {
				return Permanent(fmt.Errorf("enabled[%s]: the BMC lists no boot options to enable or disable: %w", quoteClip(ref), ErrNotSupported))
			}
			return bad("enabled[%s] is not a boot option of this system; it has %s", quoteClip(ref), refs())
		}
	}
	if c.HTTPBootURI != nil {
		u, err := url.Parse(*c.HTTPBootURI)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("httpBootURI %s is not an absolute http or https URL", quoteClip(RedactURL(*c.HTTPBootURI)))
		}
		if u.User != nil {
			// It would be stored in the job and shown by the BMC to anyone
			// who reads the system.
			return bad("httpBootURI %s carries user info; credentials never go into a stored spec", quoteClip(RedactURL(*c.HTTPBootURI)))
		}
		if b.HTTPBootURI == nil {
			return Permanent(fmt.Errorf("httpBootURI: the system's Boot has no HttpBootUri: %w", ErrNotSupported))
		}
	}
	return nil
}

// BootOrderNeed is a [Need] for the persistent boot order: reading and
// setting it; with HTTPBootURI, setting the UEFI HTTP boot URI too.
type BootOrderNeed struct {
	HTTPBootURI bool `json:"httpBootURI,omitempty"`
}

// String names the need: "boot order", "boot order with HTTP boot URI".
func (n BootOrderNeed) String() string {
	if n.HTTPBootURI {
		return "boot order with HTTP boot URI"
	}
	return "boot order"
}
