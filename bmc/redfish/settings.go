package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

// settingsAnnotation is a resource's @Redfish.Settings, the standard
// Redfish way to hold a change until a reset: a settings object (its own
// URI) takes the PATCH, and what it holds that differs from the resource
// applies at the next boot. The BIOS (bios.go), Secure Boot
// (secureboot.go) and boot order (bootorder.go) code all read and write
// through it. Embed it in a document struct to decode it.
type settingsAnnotation struct {
	Settings *struct {
		SettingsObject      schemas.Link
		SupportedApplyTimes []string
	} `json:"@Redfish.Settings"`
}

// settingsRef is what the driver keeps of a @Redfish.Settings.
type settingsRef struct {
	// object is the SettingsObject, "" when the resource has none (it
	// takes a PATCH itself and applies it at once).
	object string
	// onReset is set when SupportedApplyTimes lists OnReset.
	onReset bool
}

func (a settingsAnnotation) ref() settingsRef {
	if a.Settings == nil {
		return settingsRef{}
	}
	return settingsRef{object: string(a.Settings.SettingsObject), onReset: slices.Contains(a.Settings.SupportedApplyTimes, "OnReset")}
}

// target is where a change to resource goes: the settings object, else
// the resource itself.
func (r settingsRef) target(resource string) string {
	if r.object != "" {
		return r.object
	}
	return resource
}

// withApplyTime adds @Redfish.SettingsApplyTime OnReset to a PATCH body
// bound for the settings object, where the BMC lists OnReset (a BMC that
// lists none applies at the next reset anyway).
func (r settingsRef) withApplyTime(body map[string]any) map[string]any {
	if r.object != "" && r.onReset {
		body["@Redfish.SettingsApplyTime"] = map[string]string{"ApplyTime": "OnReset"}
	}
	return body
}

// readSettingsObject GETs the settings object of r (what names the
// resource, for messages) into raw; false when the resource has none.
func (d *Driver) readSettingsObject(ctx context.Context, what string, r settingsRef) (json.RawMessage, bool, error) {
	if r.object == "" {
		return nil, false, nil
	}
	if err := checkLink(what+" @Redfish.Settings SettingsObject", r.object); err != nil {
		return nil, false, err
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, r.object, &raw); err != nil {
		return nil, false, fmt.Errorf("read the %s settings object: %w", what, err)
	}
	return raw, true, nil
}

// invalidAt is the permanent error of a document at uri that does not
// decode.
func invalidAt(uri string, err error) error { return bmc.Permanent(fmt.Errorf("GET %s: %w", uri, err)) }
