package bmc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BIOSConfigurer is implemented by drivers that can read and change the
// system's BIOS (UEFI setup) attributes (Redfish: the Bios resource and its
// @Redfish.Settings object). A BMC without them fails every method with an
// error wrapping [ErrNotSupported] ([CapabilityBIOS]). Methods are safe for
// concurrent use. See docs/inventory-bios.md.
type BIOSConfigurer interface {
	// BIOSSettings reads the current attributes and those pending for the
	// next boot. It changes nothing.
	BIOSSettings(ctx context.Context) (BIOSSettings, error)

	// BIOSRegistry reads the attribute registry: what each attribute
	// accepts. Drivers read it once per connection. It changes nothing.
	BIOSRegistry(ctx context.Context) (BIOSRegistry, error)

	// SetBIOSAttributes requests the attributes. It validates them against
	// the registry first ([ValidateBIOSAttributes]) and sends nothing when
	// one is invalid. It is idempotent: attributes that already have the
	// value, or are already pending with it, are not sent again; with none
	// left it sends nothing. The result says whether the change waits for
	// the next boot (BIOSApply.RebootRequired); the driver never reboots.
	// Callers verify by reading BIOSSettings after that boot.
	SetBIOSAttributes(ctx context.Context, attrs BIOSAttributes) (BIOSApply, error)
}

// BIOSAttributes are BIOS attribute values by name, as canonical text:
// enumeration value names as they are, integers in decimal without leading
// zeros or "+", booleans "true" or "false". Drivers send each with the JSON
// type the registry gives it.
//
// A BMC may report an attribute's value as a JSON object or array (HPE
// Cray EX reports every value as an object such as
// {"AllowableValues": [...], "current_value": "UEFI"}). Drivers read such
// an object's scalar current_value as the value; any other structured value
// is kept as its compact JSON text (e.g. ["Pxe","Hdd"]), and such an
// attribute can be set only where the registry gives it a type (see
// [BIOSAttributeDef.Type]). See docs/inventory-bios.md.
type BIOSAttributes map[string]string

// Differing returns, sorted, the names of the attributes of a whose value
// in current is missing or other.
func (a BIOSAttributes) Differing(current BIOSAttributes) []string {
	var out []string
	for k, v := range a {
		if cur, ok := current[k]; !ok || cur != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// BIOSSettings is what [BIOSConfigurer.BIOSSettings] reads.
//
// +kubebuilder:object:generate=true
type BIOSSettings struct {
	// Attributes are the current values. Password attributes are left out
	// (BMCs report them as null).
	Attributes BIOSAttributes `json:"attributes,omitempty"`
	// Pending are values requested and not applied yet: they take effect
	// at the next boot. Only those that differ from Attributes.
	Pending BIOSAttributes `json:"pending,omitempty"`
	// AttributeRegistry names the registry the attributes follow, e.g.
	// BiosAttributeRegistry.v1_0_0.
	AttributeRegistry string `json:"attributeRegistry,omitempty"`
}

// BIOSApply is the result of [BIOSConfigurer.SetBIOSAttributes].
//
// +kubebuilder:object:generate=true
type BIOSApply struct {
	// RebootRequired is set when (some of) the attributes are pending: the
	// BMC applies them at the next boot of the system.
	RebootRequired bool `json:"rebootRequired,omitempty"`
	// Pending are the values the BMC holds as pending after the call
	// (those that differ from the current ones), the requested ones and
	// any that were pending before.
	Pending BIOSAttributes `json:"pending,omitempty"`
}

// BIOSAttributeType is the type of an attribute in a [BIOSRegistry], as
// Redfish's AttributeRegistry names it.
type BIOSAttributeType string

// BIOS attribute types.
const (
	BIOSEnumeration BIOSAttributeType = "Enumeration"
	BIOSString      BIOSAttributeType = "String"
	BIOSInteger     BIOSAttributeType = "Integer"
	BIOSBoolean     BIOSAttributeType = "Boolean"
	BIOSPassword    BIOSAttributeType = "Password"
)

// BIOSRegistry is an attribute registry: what each BIOS attribute accepts.
type BIOSRegistry struct {
	// ID names the registry, e.g. BiosAttributeRegistry.v1_0_0.
	ID         string
	Attributes []BIOSAttributeDef
}

// BIOSAttributeDef is one attribute of a [BIOSRegistry].
type BIOSAttributeDef struct {
	Name string
	// Type is empty when no type is known: a driver that reads a
	// structured value (an object without a scalar current_value, an
	// array) and has no registry entry for it. [ValidateBIOSAttributes]
	// refuses to set such an attribute.
	Type     BIOSAttributeType
	ReadOnly bool
	// Values are the allowed value names of an Enumeration.
	Values []string
	// LowerBound and UpperBound bound an Integer, when set.
	LowerBound, UpperBound *int64
	// MinLength and MaxLength bound a String's length in characters,
	// when set.
	MinLength, MaxLength *int64
	// ResetRequired says the registry expects a reset for a change to take
	// effect (advisory: what the BMC holds as pending is the fact).
	ResetRequired bool
}

// Lookup returns the attribute named name.
func (r BIOSRegistry) Lookup(name string) (BIOSAttributeDef, bool) {
	for _, a := range r.Attributes {
		if a.Name == name {
			return a, true
		}
	}
	return BIOSAttributeDef{}, false
}

// ErrInvalidBIOSAttribute is wrapped by every [*BIOSAttributeError].
var ErrInvalidBIOSAttribute = errors.New("invalid BIOS attribute")

// BIOSAttributeError is a requested attribute the registry refuses.
type BIOSAttributeError struct {
	Attribute string
	// Value is the requested value; empty for a password attribute (never
	// printed).
	Value string
	// Reason says what is wrong, e.g. `not one of Enabled, Disabled`.
	Reason string
}

// Error is one line: the attribute's name (quoted when it is not
// printable) and the value (quoted), each cut at about 200 bytes.
func (e *BIOSAttributeError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("BIOS attribute %s: %s", nameText(e.Attribute), e.Reason)
	}
	return fmt.Sprintf("BIOS attribute %s=%s: %s", nameText(e.Attribute), quoteClip(e.Value), e.Reason)
}

// Unwrap returns ErrInvalidBIOSAttribute.
func (e *BIOSAttributeError) Unwrap() error { return ErrInvalidBIOSAttribute }

// ValidateBIOSAttributes checks attrs against reg without any request: it
// refuses an empty set, unknown and read-only attributes, password
// attributes (their value would be stored in a job), an Enumeration value
// not among the allowed ones, a value of the wrong type (integers in
// canonical decimal, booleans "true"/"false"), an Integer outside its bounds,
// a String outside its lengths, and an attribute whose type is unknown (an
// empty Type). The error joins one [*BIOSAttributeError] per problem, sorted
// by attribute name (errors.As finds the first, errors.Is
// [ErrInvalidBIOSAttribute] matches), and is permanent ([IsTransient] is
// false). Its message is one line: the problems separated by "; ", at most
// the first 5 of them spelt out.
func ValidateBIOSAttributes(reg BIOSRegistry, attrs BIOSAttributes) error {
	if len(attrs) == 0 {
		return Permanent(fmt.Errorf("%w: no attributes to set", ErrInvalidBIOSAttribute))
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		if err := validateAttr(reg, name, attrs[name]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return Permanent(biosAttributeErrors(errs))
}

// maxBIOSErrorsShown bounds the problems a ValidateBIOSAttributes message
// spells out.
const maxBIOSErrorsShown = 5

// biosAttributeErrors joins the problems of one ValidateBIOSAttributes
// call on one line (errors.Join would put each on its own line).
type biosAttributeErrors []error

func (e biosAttributeErrors) Error() string {
	var b strings.Builder
	for i, err := range e {
		if i == maxBIOSErrorsShown {
			fmt.Fprintf(&b, "; and %d more", len(e)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (e biosAttributeErrors) Unwrap() []error { return e }

func validateAttr(reg BIOSRegistry, name, v string) error {
	bad := func(reason string, args ...any) error {
		return &BIOSAttributeError{Attribute: name, Value: v, Reason: fmt.Sprintf(reason, args...)}
	}
	def, ok := reg.Lookup(name)
	if !ok {
		return bad("unknown attribute: not in the attribute registry %s", regName(reg))
	}
	if def.Type == BIOSPassword {
		return &BIOSAttributeError{Attribute: name, Reason: "a password attribute cannot be set through a job (its value would be stored)"}
	}
	if def.Type == "" {
		return bad("no type is known for it (a structured value no attribute registry types, or a registry entry without a Type), so it cannot be set")
	}
	if def.ReadOnly {
		return bad("read-only attribute")
	}
	switch def.Type {
	case BIOSEnumeration:
		if !slices.Contains(def.Values, v) {
			return bad("not an allowed value; want one of %s", quoteList(def.Values))
		}
	case BIOSBoolean:
		if v != "true" && v != "false" {
			return bad("not a Boolean; want \"true\" or \"false\"")
		}
	case BIOSInteger:
		n, err := ParseBIOSInteger(v)
		if err != nil {
			return bad("%v", err)
		}
		if def.LowerBound != nil && n < *def.LowerBound {
			return bad("below the lower bound %d", *def.LowerBound)
		}
		if def.UpperBound != nil && n > *def.UpperBound {
			return bad("above the upper bound %d", *def.UpperBound)
		}
	case BIOSString:
		n := int64(utf8.RuneCountInString(v))
		if def.MinLength != nil && n < *def.MinLength {
			return bad("%d characters, shorter than the minimum %d", n, *def.MinLength)
		}
		if def.MaxLength != nil && n > *def.MaxLength {
			return bad("%d characters, longer than the maximum %d", n, *def.MaxLength)
		}
	default:
		return bad("the registry gives it type %q, which cannot be set", def.Type)
	}
	return nil
}

// ParseBIOSInteger parses an Integer attribute value in canonical decimal
// ("0", "-12"; no "+", leading zeros, spaces or exponent).
func ParseBIOSInteger(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != v {
		return 0, fmt.Errorf("not an Integer in canonical decimal (e.g. 3 or -1)")
	}
	return n, nil
}

func regName(r BIOSRegistry) string {
	if r.ID == "" {
		return "(unnamed)"
	}
	return nameText(r.ID)
}

// MaxQuoted bounds, in bytes, one piece of text (a vendor's or a user's)
// that an error message quotes (QuoteBounded's result, "..." included).
const MaxQuoted = 200

const maxQuoted = MaxQuoted

// quoteList quotes vs, separated by commas, in about maxQuoted bytes: the
// values that fit, then how many more there are.
func quoteList(vs []string) string {
	if len(vs) == 0 {
		return "(none listed)"
	}
	var b strings.Builder
	for i, v := range vs {
		q := quoteClip(v)
		if i > 0 && b.Len()+len(q) > maxQuoted {
			fmt.Fprintf(&b, " and %d more", len(vs)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q)
	}
	return b.String()
}

// QuoteBounded quotes s for an error message: strconv.Quote (one line,
// control characters escaped) in at most MaxQuoted bytes; a longer s is
// cut at a rune boundary, with "..." after the closing quote. Drivers use
// it for a vendor's or a user's text, so a message stays one short line
// whatever a BMC answered.
func QuoteBounded(s string) string {
	q := strconv.Quote(s)
	if len(q) <= MaxQuoted {
		return q
	}
	n := min(len(s), MaxQuoted)
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	for s = s[:n]; ; {
		if q = strconv.Quote(s); len(q) <= MaxQuoted-3 || s == "" {
			return q + "..."
		}
		_, w := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-w]
	}
}

func quoteClip(s string) string { return QuoteBounded(s) }

// nameText is a name for a message: as it is when it is short and
// printable, else quoted and cut (quoteClip).
func nameText(s string) string {
	if len(s) <= maxQuoted && !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) }) {
		return s
	}
	return quoteClip(s)
}
