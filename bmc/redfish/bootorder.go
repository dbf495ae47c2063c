package redfish

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.BootOrderManager = (*Driver)(nil)

const (
	// subBootOptions is the system's Boot.BootOptions link in systemDoc.Sub.
	subBootOptions = "BootOptions"
	// propBootOrder is Boot.BootOrder in systemDoc.BootHas.
	propBootOrder = "BootOrder"
)

// bootOptionDoc is what the driver reads from a BootOption.
type bootOptionDoc struct {
	opt      bmc.BootOption
	uri      string // its @odata.id: where a change goes without a settings object
	settings settingsRef
}

// decodeBootOption decodes a BootOption. Its public properties are read
// through gofish's schemas.BootOption; @odata.id, @Redfish.Settings (AMI
// keeps BootOptionEnabled changes in one) and whether BootOptionReference
// is there by hand. An option without a BootOptionReference is refused:
// BootOrder could not name it.
func decodeBootOption(b []byte) (bootOptionDoc, error) {
	var bo schemas.BootOption
	if err := json.Unmarshal(b, &bo); err != nil {
		return bootOptionDoc{}, fmt.Errorf("invalid BootOption: %w", err)
	}
	var extra struct {
		ODataID string `json:"@odata.id"`
		settingsAnnotation
	}
	if err := json.Unmarshal(b, &extra); err != nil {
		return bootOptionDoc{}, fmt.Errorf("invalid BootOption: %w", err)
	}
	ref := strings.TrimSpace(bo.BootOptionReference)
	if ref == "" {
		return bootOptionDoc{}, fmt.Errorf("invalid BootOption %s: no BootOptionReference", quoteClip(extra.ODataID))
	}
	o := bmc.BootOption{Reference: ref, DisplayName: strings.TrimSpace(bo.DisplayName), Alias: string(bo.Alias),
		Enabled: bo.BootOptionEnabled, UefiDevicePath: bo.UefiDevicePath}
	if bo.ID != ref {
		o.ID = bo.ID
	}
	if !optionEnabledReported(b) {
		// BootOptionEnabled is optional: an option the BMC reports nothing
		// about is in the order, so it boots.
		o.Enabled = true
	}
	return bootOptionDoc{opt: o, uri: extra.ODataID, settings: extra.ref()}, nil
}

// optionEnabledReported reports whether a BootOption document has a
// non-null BootOptionEnabled.
func optionEnabledReported(b []byte) bool {
	var p struct{ BootOptionEnabled json.RawMessage }
	return json.Unmarshal(b, &p) == nil && len(p.BootOptionEnabled) > 0 && !bytes.Equal(bytes.TrimSpace(p.BootOptionEnabled), []byte("null"))
}

// bootSettings is what a system's settings object holds of its Boot; nil
// fields are not held.
type bootSettings struct {
	order   []string
	httpURI *string
}

func decodeBootSettings(b []byte) (bootSettings, error) {
	var doc struct {
		Boot struct {
			BootOrder   []string
			HTTPBootURI *string `json:"HttpBootUri"`
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return bootSettings{}, fmt.Errorf("invalid ComputerSystem settings object: %w", err)
	}
	return bootSettings{order: doc.Boot.BootOrder, httpURI: doc.Boot.HTTPBootURI}, nil
}

// decodeOptionSettings reads the BootOptionEnabled a BootOption's settings
// object holds; nil when it holds none.
func decodeOptionSettings(b []byte) (*bool, error) {
	var doc struct{ BootOptionEnabled *bool }
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("invalid BootOption settings object: %w", err)
	}
	return doc.BootOptionEnabled, nil
}

// bootRead is one read of everything SetBootOrder needs.
type bootRead struct {
	state   bmc.BootOrder
	sys     systemDoc
	options map[string]bootOptionDoc // by reference
}

// readBootOrder reads the system (one GET), its settings object when it
// has one, and the BootOptions collection and members (one GET per
// member, or one in all with $expand; one more per option with a settings
// object). A system whose Boot has neither BootOrder nor BootOptions fails
// with an error wrapping bmc.ErrNotSupported.
func (d *Driver) readBootOrder(ctx context.Context) (bootRead, error) {
	sys, err := d.readSystem(ctx)
	if err != nil {
		return bootRead{}, err
	}
	optsURI, hasOpts := sys.Sub[subBootOptions]
	if !sys.BootHas[propBootOrder] && !hasOpts {
		return bootRead{}, fmt.Errorf("the system's Boot has no BootOrder and no BootOptions (%s): %w", sys.typeName(), bmc.ErrNotSupported)
	}
	r := bootRead{sys: sys, options: map[string]bootOptionDoc{}}
	r.state.Order = slices.Clone(sys.Boot.BootOrder)
	if r.state.Order == nil {
		r.state.Order = []string{}
	}
	if sys.BootHas[propHTTPURI] {
		u := ""
		if sys.Boot.HTTPBootURI != nil {
			u = *sys.Boot.HTTPBootURI
		}
		r.state.HTTPBootURI = &u
	}
	raw, ok, err := d.readSettingsObject(ctx, "ComputerSystem", sys.Settings)
	if err != nil {
		return bootRead{}, err
	}
	if ok {
		held, err := decodeBootSettings(raw)
		if err != nil {
			return bootRead{}, invalidAt(sys.Settings.object, err)
		}
		if held.order != nil && !slices.Equal(held.order, r.state.Order) {
			r.state.PendingOrder = held.order
		}
		if held.httpURI != nil && r.state.HTTPBootURI != nil && *held.httpURI != *r.state.HTTPBootURI {
			r.state.PendingHTTPBootURI = held.httpURI
		}
	}
	if hasOpts {
		if err := checkLink("BootOptions", optsURI); err != nil {
			return bootRead{}, err
		}
		root := parseRootFeatures(d.s.wire.serviceRoot())
		var docs []bootOptionDoc
		_, err := d.members(ctx, root, optsURI, func(body []byte) error {
			o, err := decodeBootOption(body)
			if err != nil {
				return &invalidDocError{err}
			}
			docs = append(docs, o)
			return nil
		})
		if err != nil {
			return bootRead{}, fmt.Errorf("read BootOptions: %w", err)
		}
		for _, o := range docs {
			if _, dup := r.options[o.opt.Reference]; dup {
				continue // listed twice: the first wins
			}
			if sraw, ok, err := d.readSettingsObject(ctx, "BootOption "+o.opt.Reference, o.settings); err != nil {
				return bootRead{}, err
			} else if ok {
				held, err := decodeOptionSettings(sraw)
				if err != nil {
					return bootRead{}, invalidAt(o.settings.object, err)
				}
				if held != nil && *held != o.opt.Enabled {
					o.opt.PendingEnabled = held
				}
			}
			r.options[o.opt.Reference] = o
			r.state.Options = append(r.state.Options, o.opt)
		}
	}
	r.state.Bound()
	return r, nil
}

// BootOrder implements [bmc.BootOrderManager]: Boot.BootOrder and
// Boot.HttpBootUri of the system, what its settings object holds for the
// next boot (where it has one), and the BootOptions. Requests: 1 + (1 with
// a settings object) + (1 + N, or 1 with $expand) for N options.
func (d *Driver) BootOrder(ctx context.Context) (bmc.BootOrder, error) {
	const op = "read boot order"
	done, err := d.begin()
	if err != nil {
		return bmc.BootOrder{}, d.opErr(op, err)
	}
	defer done()
	r, err := d.readBootOrder(ctx)
	if err != nil {
		return bmc.BootOrder{}, d.opErr(op, err)
	}
	return r.state, nil
}

// SetBootOrder implements [bmc.BootOrderManager]. It reads the state,
// validates c against it (bmc.ValidateBootOrderChange) and sends what the
// next boot does not already bring: one PATCH of the system's Boot (the
// whole order, bmc.CompleteBootOrder, and the HTTP boot URI) to its
// settings object, with @Redfish.SettingsApplyTime OnReset where listed, or
// to the system (with If-Match as the boot override's PATCH); one PATCH of BootOptionEnabled per option to change (to
// its settings object where it has one). Then it reads everything back:
// each requested value must be current or pending. With nothing to send it
// sends nothing.
func (d *Driver) SetBootOrder(ctx context.Context, c bmc.BootOrderChange) (bmc.BootOrder, error) {
	const op = "set boot order"
	done, err := d.begin()
	if err != nil {
		return bmc.BootOrder{}, d.opErr(op, err)
	}
	defer done()
	r, err := d.readBootOrder(ctx)
	if err != nil {
		return bmc.BootOrder{}, d.opErr(op, err)
	}
	if len(c.Order) > 0 && !r.sys.BootHas[propBootOrder] {
		return r.state, d.opErr(op, fmt.Errorf("the system's Boot has no BootOrder: %w", bmc.ErrNotSupported))
	}
	if err := bmc.ValidateBootOrderChange(r.state, c); err != nil {
		return r.state, d.opErr(op, err)
	}
	next := r.state.Next()
	sent := false
	boot := map[string]any{}
	for _, what := range c.Differing(next) {
		switch {
		case what == "order":
			boot["BootOrder"] = bmc.CompleteBootOrder(next.Order, c.Order)
		case what == "httpBootURI":
			boot["HttpBootUri"] = *c.HTTPBootURI
		case strings.HasPrefix(what, "enabled:"):
			ref := strings.TrimPrefix(what, "enabled:")
			o := r.options[ref]
			target := o.settings.target(o.uri)
			if target == "" {
				return r.state, d.opErr(op, bmc.Permanent(fmt.Errorf("the BootOption %s has no @odata.id to PATCH", quoteClip(ref))))
			}
			if err := checkLink("BootOption "+ref, target); err != nil {
				return r.state, d.opErr(op, err)
			}
			d.logger(ctx).V(1).Info("setting a boot option's enablement", "uri", target, "option", ref, "enabled", c.Enabled[ref])
			if err := d.patch(ctx, target, o.settings.withApplyTime(map[string]any{"BootOptionEnabled": c.Enabled[ref]}), ""); err != nil {
				return r.state, d.opErr(op, fmt.Errorf("PATCH %s: %w", target, err))
			}
			sent = true
		}
	}
	if len(boot) > 0 {
		target := r.sys.Settings.target(d.systemURI)
		d.logger(ctx).V(1).Info("setting the boot order", "uri", target, "properties", slices.Sorted(maps.Keys(boot)))
		body := r.sys.Settings.withApplyTime(map[string]any{"Boot": boot})
		if target == d.systemURI {
			// The system itself: with its If-Match handling, as the boot
			// override's PATCH.
			err = d.patchSystem(ctx, body)
		} else {
			err = d.patch(ctx, target, body, "")
		}
		if err != nil {
			return r.state, d.opErr(op, fmt.Errorf("PATCH %s: %w", target, err))
		}
		sent = true
	}
	if !sent {
		return r.state, nil
	}
	if r, err = d.readBootOrder(ctx); err != nil {
		return bmc.BootOrder{}, d.opErr(op, fmt.Errorf("read back after the change: %w", err))
	}
	if diff := c.Differing(r.state.Next()); len(diff) > 0 {
		return r.state, d.opErr(op, bmc.Permanent(fmt.Errorf("the BMC answered the change but dropped %s: it reads order %s, pending %s",
			strings.Join(diff, ", "), quoteClip(strings.Join(r.state.Order, ",")), quoteClip(strings.Join(r.state.PendingOrder, ",")))))
	}
	return r.state, nil
}

// checkBootOrder is CheckNeed's rule for Need.BootOrder: the system's Boot
// has BootOrder or BootOptions, and HttpBootUri when the need says so.
func (d *Driver) checkBootOrder(ctx context.Context, n bmc.BootOrderNeed) error {
	doc, err := d.knownSystem(ctx)
	if err != nil {
		return err
	}
	if _, ok := doc.Sub[subBootOptions]; !ok && !doc.BootHas[propBootOrder] {
		return fmt.Errorf("the system's Boot has no BootOrder and no BootOptions (%s): %w", doc.typeName(), bmc.ErrNotSupported)
	}
	if n.HTTPBootURI && !doc.BootHas[propHTTPURI] {
		return fmt.Errorf("the system's Boot has no HttpBootUri (%s): %w", doc.typeName(), bmc.ErrNotSupported)
	}
	return nil
}
