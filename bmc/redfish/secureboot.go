package redfish

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.SecureBootManager = (*Driver)(nil)

// subSecureBoot is the system's SecureBoot link in systemDoc.Sub.
const subSecureBoot = "SecureBoot"

// secureBootDoc is what the driver reads from a SecureBoot resource.
type secureBootDoc struct {
	enabled bool
	current bmc.SecureBootCurrentBoot
	mode    bmc.SecureBootMode
	// resetTarget is the #SecureBoot.ResetKeys target, "" when the
	// resource has none; resetAllowed its ResetKeysType allowable values
	// (nil when it lists none).
	resetTarget  string
	resetAllowed []string
	settings     settingsRef
}

// decodeSecureBoot decodes a SecureBoot resource. Its public properties
// are read through gofish's schemas.SecureBoot; the ResetKeys target (which
// gofish keeps private), its allowable values and @Redfish.Settings (which
// gofish does not decode) by hand. A document without SecureBootEnable is
// refused: it says nothing about the setting.
func decodeSecureBoot(b []byte) (secureBootDoc, error) {
	var sb schemas.SecureBoot
	if err := json.Unmarshal(b, &sb); err != nil {
		return secureBootDoc{}, fmt.Errorf("invalid SecureBoot: %w", err)
	}
	var extra struct {
		SecureBootEnable json.RawMessage
		Actions          struct {
			ResetKeys struct {
				Target  string   `json:"target"`
				Allowed []string `json:"ResetKeysType@Redfish.AllowableValues"`
			} `json:"#SecureBoot.ResetKeys"`
		}
		settingsAnnotation
	}
	if err := json.Unmarshal(b, &extra); err != nil {
		return secureBootDoc{}, fmt.Errorf("invalid SecureBoot: %w", err)
	}
	if e := bytes.TrimSpace(extra.SecureBootEnable); len(e) == 0 || string(e) == "null" {
		return secureBootDoc{}, fmt.Errorf("invalid SecureBoot: no SecureBootEnable")
	}
	return secureBootDoc{
		enabled:      sb.SecureBootEnable,
		current:      bmc.ParseSecureBootCurrentBoot(string(sb.SecureBootCurrentBoot)),
		mode:         bmc.ParseSecureBootMode(string(sb.SecureBootMode)),
		resetTarget:  extra.Actions.ResetKeys.Target,
		resetAllowed: extra.Actions.ResetKeys.Allowed,
		settings:     extra.ref(),
	}, nil
}

// decodeSecureBootSettings reads the SecureBootEnable a settings object
// holds; nil when it holds none.
func decodeSecureBootSettings(b []byte) (*bool, error) {
	var doc struct{ SecureBootEnable *bool }
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("invalid SecureBoot settings object: %w", err)
	}
	return doc.SecureBootEnable, nil
}

// v1ResetKeys are the resets of SecureBoot v1_0: what a ResetKeys action
// that lists no allowable values is taken to offer (as sushy does).
var v1ResetKeys = []bmc.SecureBootResetKeys{bmc.SecureBootResetAllKeysToDefault, bmc.SecureBootDeleteAllKeys, bmc.SecureBootDeletePK}

// state is the bmc.SecureBootState of doc, with the value its settings
// object holds (nil: none).
func (doc secureBootDoc) state(settings *bool) bmc.SecureBootState {
	s := bmc.SecureBootState{Enabled: doc.enabled, CurrentBoot: doc.current, Mode: doc.mode,
		Pending: bmc.PendingSecureBoot(doc.enabled, settings, doc.current)}
	switch {
	case doc.resetTarget == "":
	case doc.resetAllowed == nil:
		s.ResetKeys = append(s.ResetKeys, v1ResetKeys...)
	default:
		for _, a := range doc.resetAllowed {
			if k := bmc.SecureBootResetKeys(a); k.Valid() && !s.OffersReset(k) {
				s.ResetKeys = append(s.ResetKeys, k)
			}
		}
	}
	return s
}

// readSecureBoot reads the system's SecureBoot and, when it has one, its
// settings object: one or two GETs. A system without a SecureBoot link, or
// whose link answers 404, fails with an error wrapping bmc.ErrNotSupported.
func (d *Driver) readSecureBoot(ctx context.Context) (secureBootDoc, bmc.SecureBootState, error) {
	// The link, read when the driver selected the system, does not change.
	uri, ok := d.sys.Sub[subSecureBoot]
	if !ok {
		return secureBootDoc{}, bmc.SecureBootState{}, fmt.Errorf("the system %s links no SecureBoot resource: %w", d.systemURI, bmc.ErrNotSupported)
	}
	if err := checkLink("SecureBoot", uri); err != nil {
		return secureBootDoc{}, bmc.SecureBootState{}, err
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, uri, &raw); err != nil {
		if isNotFound(err) {
			return secureBootDoc{}, bmc.SecureBootState{}, fmt.Errorf("the system's SecureBoot %s is missing (404): %w", uri, bmc.ErrNotSupported)
		}
		return secureBootDoc{}, bmc.SecureBootState{}, fmt.Errorf("read SecureBoot: %w", err)
	}
	doc, err := decodeSecureBoot(raw)
	if err != nil {
		return doc, bmc.SecureBootState{}, invalidAt(uri, err)
	}
	sraw, ok, err := d.readSettingsObject(ctx, "SecureBoot", doc.settings)
	if err != nil {
		return doc, bmc.SecureBootState{}, err
	}
	var held *bool
	if ok {
		if held, err = decodeSecureBootSettings(sraw); err != nil {
			return doc, bmc.SecureBootState{}, invalidAt(doc.settings.object, err)
		}
	}
	return doc, doc.state(held), nil
}

// SecureBoot implements [bmc.SecureBootManager]: the system's SecureBoot
// resource (and its @Redfish.Settings object, where it has one). One or two
// GETs.
func (d *Driver) SecureBoot(ctx context.Context) (bmc.SecureBootState, error) {
	const op = "read Secure Boot"
	done, err := d.begin()
	if err != nil {
		return bmc.SecureBootState{}, d.opErr(op, err)
	}
	defer done()
	_, s, err := d.readSecureBoot(ctx)
	if err != nil {
		return bmc.SecureBootState{}, d.opErr(op, err)
	}
	return s, nil
}

// SetSecureBoot implements [bmc.SecureBootManager]. It reads the state and
// sends nothing when the next boot already brings enabled. Otherwise it
// PATCHes {"SecureBootEnable": enabled} to the settings object (with
// @Redfish.SettingsApplyTime OnReset where listed) or, without one, to the
// SecureBoot resource, and reads back. Requests: 1-2 GETs when nothing is
// sent, else 2-4 GETs and one PATCH.
func (d *Driver) SetSecureBoot(ctx context.Context, enabled bool) (bmc.SecureBootState, error) {
	op := "disable Secure Boot"
	if enabled {
		op = "enable Secure Boot"
	}
	done, err := d.begin()
	if err != nil {
		return bmc.SecureBootState{}, d.opErr(op, err)
	}
	defer done()
	doc, s, err := d.readSecureBoot(ctx)
	if err != nil {
		return bmc.SecureBootState{}, d.opErr(op, err)
	}
	if s.NextBoot() == enabled {
		return s, nil
	}
	if enabled && s.Mode == bmc.SecureBootSetupMode {
		return s, d.opErr(op, bmc.Permanent(bmc.ErrSecureBootSetupMode))
	}
	target := doc.settings.target(d.sys.Sub[subSecureBoot])
	body := doc.settings.withApplyTime(map[string]any{"SecureBootEnable": enabled})
	d.logger(ctx).V(1).Info("setting Secure Boot", "uri", target, "enabled", enabled)
	if err := d.patch(ctx, target, body, ""); err != nil {
		return s, d.opErr(op, fmt.Errorf("PATCH %s: %w", target, err))
	}
	if _, s, err = d.readSecureBoot(ctx); err != nil {
		return s, d.opErr(op, fmt.Errorf("read back after the PATCH: %w", err))
	}
	if s.NextBoot() != enabled {
		return s, d.opErr(op, bmc.Permanent(fmt.Errorf("the BMC answered the PATCH but dropped SecureBootEnable=%t: it reads %s", enabled, s)))
	}
	return s, nil
}

// ResetSecureBootKeys implements [bmc.SecureBootManager]: it POSTs
// #SecureBoot.ResetKeys with ResetKeysType kind when the resource has the
// action and lists kind (a ResetKeys that lists no allowable values is taken
// to offer ResetAllKeysToDefault, DeleteAllKeys and DeletePK), then reads
// the state back. Otherwise the error wraps bmc.ErrNotSupported and nothing
// is sent.
func (d *Driver) ResetSecureBootKeys(ctx context.Context, kind bmc.SecureBootResetKeys) (bmc.SecureBootState, error) {
	op := "reset Secure Boot keys " + string(kind)
	if !kind.Valid() {
		return bmc.SecureBootState{}, d.opErr("reset Secure Boot keys", bmc.Permanent(fmt.Errorf("unknown key reset %s; want one of %s", quoteClip(string(kind)), resetKinds())))
	}
	done, err := d.begin()
	if err != nil {
		return bmc.SecureBootState{}, d.opErr(op, err)
	}
	defer done()
	doc, s, err := d.readSecureBoot(ctx)
	if err != nil {
		return bmc.SecureBootState{}, d.opErr(op, err)
	}
	if doc.resetTarget == "" {
		return s, d.opErr(op, fmt.Errorf("the SecureBoot resource has no #SecureBoot.ResetKeys action: %w", bmc.ErrNotSupported))
	}
	if !s.OffersReset(kind) {
		return s, d.opErr(op, fmt.Errorf("the BMC offers only %s: %w", resetKindList(s.ResetKeys), bmc.ErrNotSupported))
	}
	if err := checkLink("#SecureBoot.ResetKeys target", doc.resetTarget); err != nil {
		return s, d.opErr(op, err)
	}
	err = d.do(ctx, false, func(c *gofish.APIClient) error {
		resp, err := c.Post(doc.resetTarget, map[string]string{"ResetKeysType": string(kind)})
		drain(resp)
		return err
	})
	if err != nil {
		return s, d.opErr(op, fmt.Errorf("POST %s: %w", doc.resetTarget, err))
	}
	if _, s, err = d.readSecureBoot(ctx); err != nil {
		return s, d.opErr(op, fmt.Errorf("read back after the reset: %w", err))
	}
	return s, nil
}

func resetKinds() string { return resetKindList(bmc.SecureBootResetKinds()) }

func resetKindList(ks []bmc.SecureBootResetKeys) string {
	if len(ks) == 0 {
		return "none"
	}
	var out []string
	for _, k := range ks {
		out = append(out, string(k))
	}
	return strings.Join(out, ", ")
}

// checkSecureBoot is CheckNeed's rule for Need.SecureBoot: the system links
// a SecureBoot; for a key reset, the resource has the ResetKeys action and
// offers the kind (one GET).
func (d *Driver) checkSecureBoot(ctx context.Context, n bmc.SecureBootNeed) error {
	doc, err := d.knownSystem(ctx)
	if err != nil {
		return err
	}
	if _, ok := doc.Sub[subSecureBoot]; !ok {
		return fmt.Errorf("the system %s links no SecureBoot resource: %w", d.systemURI, bmc.ErrNotSupported)
	}
	if n.ResetKeys == "" {
		return nil
	}
	sb, s, err := d.readSecureBoot(ctx)
	if err != nil {
		return err
	}
	if sb.resetTarget == "" {
		return fmt.Errorf("the SecureBoot resource has no #SecureBoot.ResetKeys action: %w", bmc.ErrNotSupported)
	}
	if !s.OffersReset(n.ResetKeys) {
		return fmt.Errorf("the BMC offers only %s: %w", resetKindList(s.ResetKeys), bmc.ErrNotSupported)
	}
	return nil
}
