package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.LocatorLED = (*Driver)(nil)

// Locator properties (docs/indicator-nmi.md). LocationIndicatorActive is
// ComputerSystem v1_13_0's (and Chassis'); IndicatorLED is the older
// property it deprecates, with the values Lit, Blinking, Off and Unknown
// (DMTF's descriptions, as gofish v0.26.0 carries them in
// schemas/computersystem.go and schemas/resource.go).
const (
	propActive    = "LocationIndicatorActive"
	propIndicator = "IndicatorLED"
)

// locatorDoc is what the driver reads of a resource's locator.
type locatorDoc struct {
	uri  string
	etag string
	// hasActive and hasIndicator say which property the resource has
	// (present, even if null).
	hasActive, hasIndicator bool
	active                  *bool  // nil: null
	indicator               string // "" when null or absent
	// allowed is IndicatorLED@Redfish.AllowableValues, nil when not stated.
	allowed []string
}

// parseLocator reads the locator properties of a ComputerSystem or Chassis
// body. A property of the wrong type is an error naming it and its value.
func parseLocator(body []byte) (locatorDoc, error) {
	var raw struct {
		Active    json.RawMessage `json:"LocationIndicatorActive"`
		Indicator json.RawMessage `json:"IndicatorLED"`
		Allowed   []string        `json:"IndicatorLED@Redfish.AllowableValues"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return locatorDoc{}, fmt.Errorf("locator properties: %w", err)
	}
	l := locatorDoc{hasActive: raw.Active != nil, hasIndicator: raw.Indicator != nil, allowed: raw.Allowed}
	if l.hasActive && string(raw.Active) != "null" {
		var v bool
		if err := json.Unmarshal(raw.Active, &v); err != nil {
			return locatorDoc{}, fmt.Errorf("%s is %s, not a boolean", propActive, clip(string(raw.Active)))
		}
		l.active = &v
	}
	if l.hasIndicator && string(raw.Indicator) != "null" {
		if err := json.Unmarshal(raw.Indicator, &l.indicator); err != nil {
			return locatorDoc{}, fmt.Errorf("%s is %s, not a string", propIndicator, clip(string(raw.Indicator)))
		}
	}
	return l, nil
}

func (l locatorDoc) has() bool { return l.hasActive || l.hasIndicator }

// state maps what the resource reports: LocationIndicatorActive where it
// has it (true is Blinking when IndicatorLED also reads Blinking), else
// IndicatorLED. Null or Unknown is transient: the BMC cannot read it now.
func (l locatorDoc) state() (bmc.LEDState, error) {
	if l.hasActive {
		switch {
		case l.active == nil:
			return "", bmc.Transient(fmt.Errorf("%s reports %s null: the BMC cannot read its locator now", l.uri, propActive))
		case !*l.active:
			return bmc.LEDOff, nil
		case l.indicator == "Blinking":
			return bmc.LEDBlinking, nil
		}
		return bmc.LEDOn, nil
	}
	switch l.indicator {
	case "Off":
		return bmc.LEDOff, nil
	case "Lit":
		return bmc.LEDOn, nil
	case "Blinking":
		return bmc.LEDBlinking, nil
	}
	return "", bmc.Transient(fmt.Errorf("%s reports %s %q: the BMC cannot read its locator now", l.uri, propIndicator, l.indicator))
}

// patchBody is the one property that sets s: LocationIndicatorActive
// where the resource has it (On, Off), else IndicatorLED (Lit, Off,
// Blinking) where it allows the value. What the resource cannot show is
// NotSupported, before anything is sent.
func (l locatorDoc) patchBody(s bmc.LEDState) (map[string]any, error) {
	if s != bmc.LEDBlinking && l.hasActive {
		return map[string]any{propActive: s == bmc.LEDOn}, nil
	}
	v := map[bmc.LEDState]string{bmc.LEDOn: "Lit", bmc.LEDOff: "Off", bmc.LEDBlinking: "Blinking"}[s]
	switch {
	case !l.hasIndicator && l.hasActive:
		return nil, fmt.Errorf("%s has %s but no %s: it cannot be set blinking: %w", l.uri, propActive, propIndicator, bmc.ErrNotSupported)
	case !l.hasIndicator:
		return nil, fmt.Errorf("%s has neither %s nor %s: %w", l.uri, propActive, propIndicator, bmc.ErrNotSupported)
	case l.allowed != nil && !slices.Contains(l.allowed, v):
		return nil, fmt.Errorf("%s's %s@Redfish.AllowableValues (%s) leave out %s: %w", l.uri, propIndicator, strings.Join(l.allowed, ", "), v, bmc.ErrNotSupported)
	}
	return map[string]any{propIndicator: v}, nil
}

// locator reads the resource that holds the locator (one GET once it is
// known): the system, else the first of its chassis that has one (each
// read once per connection until one has it).
func (d *Driver) locator(ctx context.Context) (locatorDoc, error) {
	read := func(uri string) (locatorDoc, error) {
		var body json.RawMessage
		etag, err := d.getJSON(ctx, uri, &body)
		if err != nil {
			return locatorDoc{}, err
		}
		l, err := parseLocator(body)
		if err != nil {
			return locatorDoc{}, bmc.Permanent(fmt.Errorf("GET %s: %w", uri, err))
		}
		l.uri, l.etag = uri, etag
		return l, nil
	}
	if d.ledURI != "" {
		return read(d.ledURI)
	}
	for _, uri := range append([]string{d.systemURI}, d.sys.Chassis...) {
		l, err := read(uri)
		if err != nil {
			return locatorDoc{}, err
		}
		if l.has() {
			d.ledURI = uri
			return l, nil
		}
	}
	return locatorDoc{}, fmt.Errorf("neither the system %s nor its chassis (%s) has %s or %s: %w",
		d.systemURI, strings.Join(d.sys.Chassis, ", "), propActive, propIndicator, bmc.ErrNotSupported)
}

// LocatorLED implements [bmc.LocatorLED]: one GET of the resource that
// holds the locator (the system, else its chassis; finding it the first
// time costs one GET of each looked at).
func (d *Driver) LocatorLED(ctx context.Context) (bmc.LEDState, error) {
	const op = "read locator LED"
	done, err := d.begin()
	if err != nil {
		return "", d.opErr(op, err)
	}
	defer done()
	l, err := d.locator(ctx)
	if err == nil {
		var s bmc.LEDState
		if s, err = l.state(); err == nil {
			return s, nil
		}
	}
	return "", d.opErr(op, err)
}

// SetLocatorLED implements [bmc.LocatorLED]: it reads the resource that
// holds the locator (one GET), then PATCHes the one property that sets s
// (see docs/indicator-nmi.md), without If-Match; a BMC that requires it
// (428) gets the PATCH once more with the ETag of a new read.
func (d *Driver) SetLocatorLED(ctx context.Context, s bmc.LEDState) error {
	op := "set locator LED " + string(s)
	if !s.Valid() {
		return d.opErr(op, bmc.Permanent(fmt.Errorf("invalid locator LED state %q: want Off, On or Blinking", s)))
	}
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	l, err := d.locator(ctx)
	if err != nil {
		return d.opErr(op, err)
	}
	body, err := l.patchBody(s)
	if err != nil {
		return d.opErr(op, err)
	}
	err = d.patch(ctx, l.uri, body, "")
	var se *StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusPreconditionRequired {
		if l, err = d.locator(ctx); err == nil {
			err = d.patch(ctx, l.uri, body, l.etag)
		}
	}
	if err != nil {
		return d.opErr(op, err)
	}
	return nil
}
