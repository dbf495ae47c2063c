package redfish

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/powerplan"
)

// systemDoc is what bmckit reads from a ComputerSystem: the few properties
// it uses (systemFields), plus the Reset action and links gofish keeps
// private (its Reset() always sends If-Match and validates on its own, which
// some BMCs reject; bmckit needs the raw target to POST it itself).
type systemDoc struct {
	systemFields
	etag string

	ResetTarget     string
	ResetInfo       string
	ResetAllowed    []string
	VirtualMediaURI string
	ManagedBy       []string
	// BootHas says which properties the system's Boot has (vendors omit
	// some: iLO 5 on Apollo has no BootSourceOverrideMode, a Cray EX node
	// no override at all); the driver sends only these.
	BootHas map[string]bool
	// Type is the @odata.type read, e.g. #ComputerSystem.v1_10_0.ComputerSystem.
	Type string
	// Sub are the links to the subordinate resources the driver reads
	// (inventory.go, bios.go), by property name; absent ones are missing.
	Sub map[string]string
	// Power says whether PowerState was there, null, or absent.
	Power powerReport
	// Chassis are the system's Links.Chassis (health.go).
	Chassis []string
	// LogServices is the system's LogServices link, "" when absent
	// (eventlog.go).
	LogServices string
	// Settings is the system's @Redfish.Settings (bootorder.go): where a
	// Boot.BootOrder change goes on a BMC that holds it until a reset.
	Settings settingsRef
}

// powerReport is how a ComputerSystem reported PowerState.
type powerReport int

const (
	powerReported powerReport = iota // a value (perhaps one bmckit cannot map)
	powerNull                        // "PowerState": null
	powerAbsent                      // no PowerState property
)

// errPowerState is the error of a system document that gives no power
// state, or nil. A system without the property cannot have its power read
// or verified at all: bmc.ErrNotSupported, at once, instead of polling
// until a task's timeout. One that reports null cannot read it now (it
// may later): transient, retried within the task's budget.
func (doc systemDoc) errPowerState() error {
	switch doc.Power {
	case powerAbsent:
		return fmt.Errorf("the system %s reports no PowerState (%s): its power cannot be read or verified over Redfish: %w", doc.ODataID, doc.typeName(), bmc.ErrNotSupported)
	case powerNull:
		return bmc.Transient(fmt.Errorf("the system %s reports PowerState null: the BMC cannot read its power now", doc.ODataID))
	}
	return nil
}

// Boot properties the driver writes.
const (
	propTarget  = "BootSourceOverrideTarget"
	propEnabled = "BootSourceOverrideEnabled"
	propMode    = "BootSourceOverrideMode"
	propHTTPURI = "HttpBootUri"
)

// hasOverride reports whether the Boot has a boot override at all (a
// target and its enablement).
func (doc systemDoc) hasOverride() bool { return doc.BootHas[propTarget] && doc.BootHas[propEnabled] }

// errNoOverride is the NotSupported error of a system whose Boot has no
// override properties.
func (doc systemDoc) errNoOverride() error {
	var missing []string
	for _, p := range []string{propTarget, propEnabled} {
		if !doc.BootHas[p] {
			missing = append(missing, p)
		}
	}
	return fmt.Errorf("the system's Boot has no %s (%s): this BMC offers no boot override: %w", strings.Join(missing, " or "), doc.typeName(), bmc.ErrNotSupported)
}

// typeName is the schema version read, for messages: "ComputerSystem.v1_10_0".
func (doc systemDoc) typeName() string {
	t := strings.TrimPrefix(doc.Type, "#")
	if i := strings.LastIndex(t, "."); i > 0 {
		t = t[:i]
	}
	if t == "" {
		return "no @odata.type"
	}
	return t
}

// systemFields are the properties of a ComputerSystem the driver reads, by
// gofish's names and types. Only these are decoded: every power poll reads
// the whole document, and decoding all of it into gofish's ComputerSystem
// (dozens of properties and links, its Boot twice more, then a second pass
// for what gofish keeps private) took twice the CPU, and 9-25% of the
// Runner's client CPU per Redfish job (docs/benchmarks.md, "Issue 28").
type systemFields struct {
	ODataID       string `json:"@odata.id"`
	ODataEtag     string `json:"@odata.etag"`
	ID            string `json:"Id"`
	UUID          string
	PowerState    schemas.PowerState
	LastResetTime string
	Boot          schemas.Boot
	// For ReadInventory (inventory.go).
	Manufacturer, Model, SerialNumber, PartNumber, SKU, BiosVersion string
	// Status is the system's health, nil when it has none (health.go):
	// read with the power state, for no further request.
	Status *healthStatus
}

// plainBoot is gofish's Boot without its UnmarshalJSON.
type plainBoot schemas.Boot

// parseSystem decodes a ComputerSystem document, in one pass.
func parseSystem(b []byte, etagHeader string) (systemDoc, error) {
	var doc systemDoc
	var extra struct {
		*systemFields
		Actions struct {
			Reset struct {
				schemas.ActionTarget
				Allowed []string `json:"ResetType@Redfish.AllowableValues"`
			} `json:"#ComputerSystem.Reset"`
		}
		VirtualMedia schemas.Link
		Links        struct{ ManagedBy, Chassis schemas.Links }
		LogServices  schemas.Link
		Type         string `json:"@odata.type"`

		Bios, Processors, Memory, Storage, EthernetInterfaces schemas.Link
		SecureBoot                                            schemas.Link
		settingsAnnotation
		// Boot is kept raw (it shadows systemFields.Boot) and decoded twice
		// below: its properties, and which of them it has.
		Boot json.RawMessage
		// PowerState is kept raw (it shadows systemFields.PowerState), to
		// tell a missing or null one from a value.
		PowerState json.RawMessage
	}
	extra.systemFields = &doc.systemFields
	if err := json.Unmarshal(b, &extra); err != nil {
		return doc, fmt.Errorf("ComputerSystem: %w", err)
	}
	// The Boot's properties (as plainBoot: gofish's Boot.UnmarshalJSON
	// decodes it twice over to keep links the driver never follows), and
	// which of those the driver writes it has (present, even if null).
	var has struct {
		Target  json.RawMessage `json:"BootSourceOverrideTarget"`
		Enabled json.RawMessage `json:"BootSourceOverrideEnabled"`
		Mode    json.RawMessage `json:"BootSourceOverrideMode"`
		HTTPURI json.RawMessage `json:"HttpBootUri"`
		// The persistent boot order (bootorder.go).
		Order       json.RawMessage `json:"BootOrder"`
		BootOptions schemas.Link
	}
	if len(extra.Boot) > 0 {
		if err := json.Unmarshal(extra.Boot, (*plainBoot)(&doc.Boot)); err != nil {
			return doc, fmt.Errorf("ComputerSystem: Boot: %w", err)
		}
		if err := json.Unmarshal(extra.Boot, &has); err != nil {
			return doc, fmt.Errorf("ComputerSystem: Boot: %w", err)
		}
	}
	switch p := extra.PowerState; {
	case p == nil:
		doc.Power = powerAbsent
	case string(p) == "null":
		doc.Power = powerNull
	default:
		doc.Power = powerReported
		if err := json.Unmarshal(p, &doc.PowerState); err != nil {
			return doc, fmt.Errorf("ComputerSystem: PowerState: %w", err)
		}
	}
	doc.ResetTarget = extra.Actions.Reset.Target
	doc.ResetInfo = extra.Actions.Reset.ActionInfoTarget
	doc.ResetAllowed = extra.Actions.Reset.Allowed
	doc.VirtualMediaURI = string(extra.VirtualMedia)
	doc.ManagedBy = extra.Links.ManagedBy.ToStrings()
	doc.Chassis = extra.Links.Chassis.ToStrings()
	doc.LogServices = string(extra.LogServices)
	doc.Type = extra.Type
	doc.Settings = extra.ref()
	doc.Sub = map[string]string{}
	for k, l := range map[string]schemas.Link{subBios: extra.Bios, subProcessors: extra.Processors, subMemory: extra.Memory,
		subStorage: extra.Storage, subEthernet: extra.EthernetInterfaces, subSecureBoot: extra.SecureBoot, subBootOptions: has.BootOptions} {
		if l != "" {
			doc.Sub[k] = string(l)
		}
	}
	doc.BootHas = map[string]bool{}
	for p, v := range map[string]json.RawMessage{propTarget: has.Target, propEnabled: has.Enabled, propMode: has.Mode, propHTTPURI: has.HTTPURI, propBootOrder: has.Order} {
		if v != nil {
			doc.BootHas[p] = true
		}
	}
	doc.etag = etagHeader
	if doc.etag == "" {
		doc.etag = doc.ODataEtag
	}
	return doc, nil
}

// powerState maps a Redfish PowerState; anything else is PowerUnknown.
func powerState(s schemas.PowerState) bmc.PowerState {
	switch strings.ToLower(string(s)) {
	case "on":
		return bmc.PowerOn
	case "off":
		return bmc.PowerOff
	case "poweringon":
		return bmc.PowerPoweringOn
	case "poweringoff":
		return bmc.PowerPoweringOff
	}
	return bmc.PowerUnknown
}

// powerPlan is what SetPower does.
type powerPlan struct {
	noop bool
	// candidates are reset types to try in order; a refused one moves to
	// the next.
	candidates []string
	// offThenOn is the last resort for cycle/reset: ForceOff, wait, On.
	offThenOn bool
	// wait is set when the server is on its way elsewhere: retry later.
	wait bool
}

// planPower decides the requests for action on a server in state cur, given
// the advertised reset types (nil when the BMC does not say: assume the
// standard ones) and those it refused before. The protocol-independent
// semantics (no-ops, cycle/reset of an off server means on) come from
// bmc/powerplan; this adds Redfish's reset types and fallbacks.
func planPower(action bmc.PowerAction, cur bmc.PowerState, advertised []string, refused map[string]bool) (powerPlan, error) {
	step, err := powerplan.Plan(cur, action)
	if err != nil {
		return powerPlan{}, bmc.Permanent(err)
	}
	if step == powerplan.StepNone {
		return powerPlan{noop: true}, nil
	}
	if cur.Transitional() {
		// On its way elsewhere: a request now may be dropped.
		return powerPlan{wait: true}, nil
	}
	offers := func(t string) bool {
		if refused[t] {
			return false
		}
		return advertised == nil || slices.Contains(advertised, t)
	}
	pick := func(ts ...string) []string {
		var out []string
		for _, t := range ts {
			if offers(t) {
				out = append(out, t)
			}
		}
		return out
	}
	switch step {
	case powerplan.StepOn:
		c := pick("On", "ForceOn", "PushPowerButton")
		if len(c) == 0 {
			return powerPlan{}, fmt.Errorf("power on: the BMC offers none of On, ForceOn, PushPowerButton (advertised: %s): %w", list(advertised), bmc.ErrNotSupported)
		}
		return powerPlan{candidates: c}, nil
	case powerplan.StepOff, powerplan.StepSoftOff:
		t := "ForceOff"
		if step == powerplan.StepSoftOff {
			t = "GracefulShutdown"
		}
		if !offers(t) {
			return powerPlan{}, fmt.Errorf("%s: the BMC does not offer ResetType %s (advertised: %s): %w", action, t, list(advertised), bmc.ErrNotSupported)
		}
		return powerPlan{candidates: []string{t}}, nil
	}
	// StepCycle, StepReset on a server that is on (or in an unknown state).
	var c []string
	if step == powerplan.StepCycle {
		c = pick("PowerCycle")
	} else {
		c = pick("ForceRestart", "GracefulRestart", "PowerCycle")
	}
	fallback := offers("ForceOff") && len(pick("On", "ForceOn")) > 0
	if len(c) == 0 && !fallback {
		return powerPlan{}, fmt.Errorf("%s: the BMC offers no restart, cycle or ForceOff+On (advertised: %s): %w", action, list(advertised), bmc.ErrNotSupported)
	}
	return powerPlan{candidates: c, offThenOn: fallback}, nil
}

func list(advertised []string) string {
	if advertised == nil {
		return "not stated"
	}
	if len(advertised) == 0 {
		return "none"
	}
	return strings.Join(advertised, ", ")
}

// Boot override mapping between bmckit and Redfish.
var bootTargets = map[bmc.BootDevice]schemas.BootSource{
	bmc.BootDeviceNone:     schemas.NoneBootSource,
	bmc.BootDevicePXE:      schemas.PxeBootSource,
	bmc.BootDeviceDisk:     schemas.HddBootSource,
	bmc.BootDeviceCDROM:    schemas.CdBootSource,
	bmc.BootDeviceBIOS:     schemas.BiosSetupBootSource,
	bmc.BootDeviceUEFIHTTP: schemas.UefiHTTPBootSource,
}

// bootPatch builds the Boot object for a PATCH: a fresh schemas.Boot with
// only the fields being set (a Boot read from the BMC would carry
// read-only annotations such as @Redfish.AllowableValues, which BMCs refuse).
// cur is the system last read: its allowed targets, and which Boot
// properties it has. The PATCH names only properties the Boot has: an
// override needs BootSourceOverrideTarget and BootSourceOverrideEnabled,
// a mode other than unchanged BootSourceOverrideMode, a URI HttpBootUri;
// UEFI HTTP boot needs UefiHttp among the allowed targets (when the BMC
// lists them). Otherwise the error wraps bmc.ErrNotSupported and nothing
// is sent. An empty URI leaves HttpBootUri as it is.
func bootPatch(o bmc.BootOverride, cur systemDoc) (*schemas.Boot, error) {
	target, ok := bootTargets[o.Device]
	if !ok {
		return nil, bmc.Permanent(fmt.Errorf("boot device %q: want none, pxe, disk, cdrom, bios or uefi-http", o.Device))
	}
	if o.URI != "" && o.Device != bmc.BootDeviceUEFIHTTP {
		return nil, bmc.Permanent(fmt.Errorf("boot device %s with a URI: only %s boots from a URI", o.Device, bmc.BootDeviceUEFIHTTP))
	}
	switch o.Mode {
	case bmc.BootModeUnchanged, bmc.BootModeUEFI, bmc.BootModeLegacy:
	default:
		return nil, bmc.Permanent(fmt.Errorf("boot mode %q: want uefi, legacy or empty (unchanged)", o.Mode))
	}
	if !cur.hasOverride() {
		return nil, cur.errNoOverride()
	}
	b := &schemas.Boot{}
	if o.Device == bmc.BootDeviceNone {
		b.BootSourceOverrideEnabled = schemas.DisabledBootSourceOverrideEnabled
		return b, nil
	}
	if allowed := cur.Boot.AllowableBootSourceOverrideTargetValues; len(allowed) > 0 && !slices.Contains(allowed, target) {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		return nil, fmt.Errorf("boot device %s (Redfish %s): the BMC allows only %s: %w", o.Device, target, strings.Join(names, ", "), bmc.ErrNotSupported)
	}
	if o.Device == bmc.BootDeviceUEFIHTTP {
		if o.Mode == bmc.BootModeLegacy {
			return nil, bmc.Permanent(fmt.Errorf("boot device %s in legacy mode: UEFI HTTP boot needs mode uefi (or unchanged)", o.Device))
		}
		if o.URI != "" {
			if !cur.BootHas[propHTTPURI] {
				return nil, fmt.Errorf("boot device %s from %s: the system's Boot has no HttpBootUri (%s), so it cannot boot a given URI: %w", o.Device, o.URI, cur.typeName(), bmc.ErrNotSupported)
			}
			uri := o.URI
			b.HTTPBootURI = &uri
		}
	}
	b.BootSourceOverrideTarget = target
	b.BootSourceOverrideEnabled = schemas.OnceBootSourceOverrideEnabled
	if o.Persistent {
		b.BootSourceOverrideEnabled = schemas.ContinuousBootSourceOverrideEnabled
	}
	if o.Mode != bmc.BootModeUnchanged && !cur.BootHas[propMode] {
		return nil, fmt.Errorf("boot mode %s: the system's Boot has no BootSourceOverrideMode (%s), so the mode cannot be set; ask for mode unchanged: %w", o.Mode, cur.typeName(), bmc.ErrNotSupported)
	}
	switch o.Mode {
	case bmc.BootModeUEFI:
		b.BootSourceOverrideMode = schemas.UEFIBootSourceOverrideMode
	case bmc.BootModeLegacy:
		b.BootSourceOverrideMode = schemas.LegacyBootSourceOverrideMode
	}
	return b, nil
}

// bootOverride maps a Boot read from the BMC. A target bmckit has no name
// for is reported as "redfish:<Target>".
func bootOverride(b schemas.Boot) bmc.BootOverride {
	var o bmc.BootOverride
	switch strings.ToLower(string(b.BootSourceOverrideMode)) {
	case "uefi":
		o.Mode = bmc.BootModeUEFI
	case "legacy":
		o.Mode = bmc.BootModeLegacy
	}
	enabled := strings.ToLower(string(b.BootSourceOverrideEnabled))
	if enabled == "" || enabled == "disabled" || b.BootSourceOverrideTarget == "" || strings.EqualFold(string(b.BootSourceOverrideTarget), "None") {
		o.Device = bmc.BootDeviceNone
		return o
	}
	o.Persistent = enabled == "continuous"
	o.Device = bmc.BootDevice("redfish:" + string(b.BootSourceOverrideTarget))
	for dev, t := range bootTargets {
		if strings.EqualFold(string(t), string(b.BootSourceOverrideTarget)) {
			o.Device = dev
		}
	}
	// HttpBootUri may outlive an HTTP boot override; it is reported only
	// with one.
	if o.Device == bmc.BootDeviceUEFIHTTP && b.HTTPBootURI != nil {
		o.URI = *b.HTTPBootURI
	}
	return o
}

// overrideApplied reports whether got (read back) shows want.
func overrideApplied(want, got bmc.BootOverride) bool {
	if want.Device == bmc.BootDeviceNone {
		return got.Device == bmc.BootDeviceNone
	}
	if got.Device != want.Device || got.Persistent != want.Persistent {
		return false
	}
	if want.URI != "" && got.URI != want.URI {
		return false
	}
	return want.Mode == bmc.BootModeUnchanged || got.Mode == want.Mode
}

// mediaTypes are the Redfish MediaTypes that serve a bmckit MediaKind.
var mediaTypes = map[bmc.MediaKind][]schemas.VirtualMediaType{
	bmc.MediaCD:  {schemas.CDVirtualMediaType, schemas.DVDVirtualMediaType},
	bmc.MediaUSB: {schemas.USBStickVirtualMediaType},
}

// mediaMatches reports whether a virtual media device serves kind. Devices
// that list no MediaTypes are matched by their Id ("CD", "Cd1", "USB1"...).
func mediaMatches(kind bmc.MediaKind, vm *schemas.VirtualMedia) bool {
	if len(vm.MediaTypes) == 0 {
		id := strings.ToLower(vm.ID)
		if kind == bmc.MediaCD {
			return strings.Contains(id, "cd") || strings.Contains(id, "dvd")
		}
		return strings.Contains(id, "usb") || strings.Contains(id, "removable")
	}
	for _, t := range vm.MediaTypes {
		for _, w := range mediaTypes[kind] {
			if strings.EqualFold(string(t), string(w)) {
				return true
			}
		}
	}
	return false
}
