package task

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/bmckit/bmckit/internal/strictjson"
)

// Spec is one task: exactly one action field is set (a one-of of pointer
// structs, so it embeds in a CRD and deep-copies trivially).
//
// +kubebuilder:validation:ExactlyOneOf=power;powerStatus;reachable;bootDevice;virtualMedia;bmcReset;waitForBoot;firmwareUpdate;inventory;bios;clearLog;locatorLED;nmi;secureBoot;bootOrder;rotateCredentials;custom
type Spec struct {
	// Name is optional; it appears in messages. Defaults to the action's
	// description, e.g. "power off".
	//
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	Power        *PowerAction        `json:"power,omitempty"`
	PowerStatus  *PowerStatusAction  `json:"powerStatus,omitempty"`
	Reachable    *ReachableAction    `json:"reachable,omitempty"`
	BootDevice   *BootDeviceAction   `json:"bootDevice,omitempty"`
	VirtualMedia *VirtualMediaAction `json:"virtualMedia,omitempty"`
	BMCReset     *BMCResetAction     `json:"bmcReset,omitempty"`
	WaitForBoot  *WaitForBootAction  `json:"waitForBoot,omitempty"`

	FirmwareUpdate *FirmwareUpdateAction `json:"firmwareUpdate,omitempty"`
	Inventory      *InventoryAction      `json:"inventory,omitempty"`
	BIOS           *BIOSAction           `json:"bios,omitempty"`
	ClearLog       *ClearLogAction       `json:"clearLog,omitempty"`
	LocatorLED     *LocatorLEDAction     `json:"locatorLED,omitempty"`
	NMI            *NMIAction            `json:"nmi,omitempty"`
	SecureBoot     *SecureBootAction     `json:"secureBoot,omitempty"`
	BootOrder      *BootOrderAction      `json:"bootOrder,omitempty"`

	// RotateCredentials rotates the credentials the job logs in with
	// (docs/credential-rotation.md).
	RotateCredentials *RotateCredentialsAction `json:"rotateCredentials,omitempty"`

	// Custom runs a kind the program adds (docs/custom-kinds.md).
	Custom *CustomAction `json:"custom,omitempty"`

	// Timeout bounds the task, retries and verification included. Zero means
	// the runner's default (see job.Config.DefaultTaskTimeout).
	Timeout Duration `json:"timeout,omitzero"`
}

// PowerOp is a power change.
//
// +kubebuilder:validation:Enum=on;off;soft-off;cycle;reset
type PowerOp string

// Power operations; see bmc.PowerAction for their exact semantics.
const (
	PowerOn      PowerOp = "on"
	PowerOff     PowerOp = "off"
	PowerSoftOff PowerOp = "soft-off"
	PowerCycle   PowerOp = "cycle"
	PowerReset   PowerOp = "reset"
)

// PowerAction changes the power state; the task succeeds once the BMC
// reports the target state.
type PowerAction struct {
	Op PowerOp `json:"op"`
}

// PowerStatusAction reads the power state without changing it (Rufio's
// "status" power action): one read, recorded in the task's
// Status.PowerState and Message. It has no fields.
type PowerStatusAction struct{}

// ReachableAction checks that the BMC answers and accepts the credentials:
// a session (the connection the job already has, or a login) and one read
// of the power state. It changes nothing. It has no fields.
type ReachableAction struct{}

// BootDevice is a boot source.
//
// +kubebuilder:validation:Enum=pxe;disk;cdrom;bios;http
type BootDevice string

// Boot devices.
const (
	BootPXE   BootDevice = "pxe"
	BootDisk  BootDevice = "disk"
	BootCDROM BootDevice = "cdrom"
	BootBIOS  BootDevice = "bios"
	// BootHTTP is UEFI HTTP boot from BootDeviceAction.URI (Redfish
	// BootSourceOverrideTarget UefiHttp with HttpBootUri). BMCs without it
	// (IPMI, older Redfish services) fail the task with reason NotSupported.
	BootHTTP BootDevice = "http"
)

// BootMode is the firmware boot mode.
//
// +kubebuilder:validation:Enum=uefi;legacy
type BootMode string

// Boot modes; empty leaves the BMC's mode unchanged.
const (
	BootModeUEFI   BootMode = "uefi"
	BootModeLegacy BootMode = "legacy"
)

// BootDeviceAction sets the boot device override.
//
// +kubebuilder:validation:XValidation:rule="self.device == 'http' ? has(self.uri) : !has(self.uri)",message="uri is required for device http and refused for the other devices"
// +kubebuilder:validation:XValidation:rule="!(self.device == 'http' && has(self.mode) && self.mode == 'legacy')",message="UEFI HTTP boot cannot boot in legacy mode: set uefi or leave mode empty"
// +kubebuilder:validation:XValidation:rule="!(has(self.persistent) && self.persistent && has(self.emulateOnce) && self.emulateOnce)",message="emulateOnce is for a one-time override: remove it or set persistent false"
type BootDeviceAction struct {
	Device BootDevice `json:"device"`
	// Persistent keeps the override for every boot; false means next boot only.
	Persistent bool `json:"persistent,omitempty"`
	// Mode is "uefi", "legacy" or empty (leave unchanged). Device "http"
	// is UEFI only: "legacy" is refused.
	Mode BootMode `json:"mode,omitempty"`
	// URI is what device "http" boots: an http:// or https:// URL with a
	// host and without credentials (at most 2048 characters), read back
	// with the device. Required for "http", refused for the other devices.
	//
	// +kubebuilder:validation:MaxLength=2048
	URI string `json:"uri,omitempty"`
	// EmulateOnce, for a one-time override (Persistent false), asks the job
	// to emulate it: the task sets the override persistent and verifies
	// that, and the job puts back the override the task found once the
	// boot it was for happened (the job's next power on, cycle or reset
	// verified, and the wait-for-boot task after it, if any, succeeded), or
	// at the latest when the job ends. For BMCs that store Once as
	// Continuous or ignore it. Nil defers to the driver (the Redfish
	// driver's Options.EmulateBootOnce), which defaults to false: a real
	// one-time override, which the BMC clears by itself. Refused with
	// Persistent.
	EmulateOnce *bool `json:"emulateOnce,omitempty"`
}

// BMCResetType is a reset of the BMC itself.
//
// +kubebuilder:validation:Enum=warm;cold
type BMCResetType string

// BMC reset types.
const (
	// BMCResetWarm restarts the BMC's firmware (Redfish GracefulRestart of
	// the Manager, IPMI Warm Reset).
	BMCResetWarm BMCResetType = "warm"
	// BMCResetCold reboots the BMC (Redfish ForceRestart of the Manager,
	// IPMI Cold Reset).
	BMCResetCold BMCResetType = "cold"
)

// BMCResetAction resets the BMC itself (not the server, whose power is
// unaffected), then waits until the BMC answers again through a new
// session, within the task's Timeout.
type BMCResetAction struct {
	// Type is "warm" or "cold"; required.
	Type BMCResetType `json:"type"`
}

// MediaKind is the virtual media device kind.
//
// +kubebuilder:validation:Enum=cd;usb
type MediaKind string

// Media kinds.
const (
	MediaCD  MediaKind = "cd"
	MediaUSB MediaKind = "usb"
)

// VirtualMediaAction inserts an image (ImageURL set) or ejects (Eject true);
// exactly one of the two.
//
// +kubebuilder:validation:XValidation:rule="has(self.imageURL) != (has(self.eject) && self.eject)",message="set imageURL to insert or eject: true to eject, not both"
type VirtualMediaAction struct {
	// Kind defaults to "cd".
	Kind     MediaKind `json:"kind,omitempty"`
	ImageURL string    `json:"imageURL,omitempty"`
	Eject    bool      `json:"eject,omitempty"`
}

// WaitForBootAction completes when the server's boot record says it booted
// (see package bootstate), or fails when the boot times out. The task's
// Timeout is the boot deadline (of each try, with retries).
type WaitForBootAction struct {
	// SystemUUID names the server; it defaults to the job's system UUID.
	//
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	SystemUUID string `json:"systemUUID,omitempty"`
	// WaitForBootPolicy (inline in JSON) is the per-attempt policy:
	// completion signals, per-signal deadlines, allowed source addresses
	// and retries. See waitforboot.go.
	WaitForBootPolicy `json:",inline"`
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid task")

// FieldError is a validation error for one field, named by its JSON path
// relative to the task spec (e.g. "power.op"); Path is empty for errors
// about the spec as a whole (e.g. no action set). It matches ErrInvalid with
// errors.Is. Callers embedding a task spec prefix Path with their own path
// (package job writes "tasks[1].power.op").
//
// +kubebuilder:object:generate=false
type FieldError struct {
	// Path is the field's JSON path, e.g. "power.op" or "virtualMedia";
	// empty when the error is about the spec as a whole.
	Path string
	// Msg says what is wrong and what to set instead.
	Msg string
}

// Error returns "invalid task: <path>: <msg>", or "invalid task: <msg>"
// when Path is empty.
func (e *FieldError) Error() string {
	if e.Path == "" {
		return ErrInvalid.Error() + ": " + e.Msg
	}
	return ErrInvalid.Error() + ": " + e.Path + ": " + e.Msg
}

// Unwrap returns ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// An action is one task kind's part of a Spec: the value of one of its
// one-of fields. Each action type describes and validates itself, next to
// its definition; a new kind is its type, a field in Spec and an entry in
// Spec.actions (docs/jobs.md, "Adding a task kind").
type action interface {
	// describe is Spec.Describe's text for an unnamed task.
	describe() string
	// validate checks the action's fields; path is the action's JSON
	// name, under which its errors (fieldErr) name the field.
	validate(path string) error
}

// namedAction is one action field: its JSON name and its value (nil when
// not set).
type namedAction struct {
	name string
	a    action
}

// actions lists every action field of s, in field order: the one place that
// names them. (A fixed array, not a map or a slice: Validate runs on every
// job start.)
func (s *Spec) actions() [17]namedAction {
	return [...]namedAction{
		{"power", opt(s.Power)}, {"powerStatus", opt(s.PowerStatus)}, {"reachable", opt(s.Reachable)},
		{"bootDevice", opt(s.BootDevice)}, {"virtualMedia", opt(s.VirtualMedia)},
		{"bmcReset", opt(s.BMCReset)}, {"waitForBoot", opt(s.WaitForBoot)},
		{"firmwareUpdate", opt(s.FirmwareUpdate)}, {"inventory", opt(s.Inventory)}, {"bios", opt(s.BIOS)},
		{"clearLog", opt(s.ClearLog)}, {"locatorLED", opt(s.LocatorLED)}, {"nmi", opt(s.NMI)},
		{"secureBoot", opt(s.SecureBoot)}, {"bootOrder", opt(s.BootOrder)}, {"rotateCredentials", opt(s.RotateCredentials)},
		{"custom", opt(s.Custom)},
	}
}

// opt is p as an action, nil when p is nil.
func opt[P interface {
	*E
	action
}, E any](p P) action {
	if p == nil {
		return nil
	}
	return p
}

// set returns the first action field that is set, or ok false.
func (s *Spec) set() (namedAction, bool) {
	for _, a := range s.actions() {
		if a.a != nil {
			return a, true
		}
	}
	return namedAction{}, false
}

// Action names which action field is set: "power", "powerStatus",
// "reachable", "bootDevice", "virtualMedia", "bmcReset", "waitForBoot",
// "firmwareUpdate", "inventory", "bios", "clearLog", "locatorLED", "nmi",
// "secureBoot", "bootOrder", "rotateCredentials", "custom", or "" when
// none is.
func (s *Spec) Action() string {
	a, _ := s.set()
	return a.name
}

// Describe is a short human description, e.g. "power off", "boot pxe (once,
// uefi)", "boot http (once) from https://boot.example/ipxe.efi" or "reset BMC
// (cold)".
func (s *Spec) Describe() string {
	if s.Name != "" {
		return s.Name
	}
	if a, ok := s.set(); ok {
		return a.a.describe()
	}
	return "empty task"
}

func (a *PowerAction) describe() string       { return "power " + string(a.Op) }
func (a *PowerStatusAction) describe() string { return "power status" }
func (a *ReachableAction) describe() string   { return "check BMC reachable" }
func (a *BMCResetAction) describe() string    { return "reset BMC (" + string(a.Type) + ")" }
func (a *WaitForBootAction) describe() string { return "wait for boot" }

func (b *BootDeviceAction) describe() string {
	when := "once"
	if b.Persistent {
		when = "persistent"
	}
	d := "boot " + string(b.Device) + " (" + when
	if e := b.EmulateOnce; e != nil && *e && !b.Persistent {
		d += " emulated"
	}
	if b.Mode != "" {
		d += ", " + string(b.Mode)
	}
	d += ")"
	if b.URI != "" {
		d += " from " + truncate(b.URI, 120)
	}
	return d
}

func (v *VirtualMediaAction) describe() string {
	if v.Eject {
		return "eject " + string(v.kind())
	}
	return "insert " + string(v.kind()) + " media"
}

func (v *VirtualMediaAction) kind() MediaKind {
	if v.Kind == "" {
		return MediaCD
	}
	return v.Kind
}

// MediaKindOrDefault returns Kind, defaulting to "cd".
func (v *VirtualMediaAction) MediaKindOrDefault() MediaKind { return v.kind() }

// Validate checks that exactly one action is set and that its fields are
// valid. Errors are a *[FieldError] (which wraps ErrInvalid) naming the
// field by its JSON path, e.g.
// `power.op: "of" is not one of on, off, soft-off, cycle, reset`.
func (s *Spec) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Path: field, Msg: fmt.Sprintf(format, args...)}
	}
	actions := s.actions()
	n, act := 0, namedAction{}
	for _, a := range actions {
		if a.a != nil {
			n, act = n+1, a
		}
	}
	if n != 1 {
		var set, all []string
		for _, a := range actions {
			all = append(all, a.name)
			if a.a != nil {
				set = append(set, a.name)
			}
		}
		if n == 0 {
			return &FieldError{Msg: "no action set: set exactly one of " + strings.Join(all, ", ")}
		}
		sort.Strings(set)
		return &FieldError{Msg: strings.Join(set, " and ") + " are all set: set exactly one action"}
	}
	if s.Timeout.Duration < 0 {
		return bad("timeout", "%s is negative", s.Timeout.Duration)
	}
	if s.Timeout.Duration > 7*24*time.Hour {
		return bad("timeout", "%s is longer than 7 days", s.Timeout.Duration)
	}
	if err := act.a.validate(act.name); err != nil {
		return err
	}
	if len(s.Name) > 253 {
		return bad("name", "%d characters, at most 253", len(s.Name))
	}
	return nil
}

func (a *PowerAction) validate(path string) error {
	switch a.Op {
	case PowerOn, PowerOff, PowerSoftOff, PowerCycle, PowerReset:
		return nil
	}
	return fieldErr(path, "op", "%q is not one of on, off, soft-off, cycle, reset", a.Op)
}

func (*PowerStatusAction) validate(string) error { return nil }
func (*ReachableAction) validate(string) error   { return nil }

func (a *BMCResetAction) validate(path string) error {
	switch a.Type {
	case BMCResetWarm, BMCResetCold:
		return nil
	}
	return fieldErr(path, "type", "%q is not one of warm, cold", a.Type)
}

func (b *BootDeviceAction) validate(path string) error {
	switch b.Device {
	case BootPXE, BootDisk, BootCDROM, BootBIOS, BootHTTP:
	default:
		return fieldErr(path, "device", "%q is not one of pxe, disk, cdrom, bios, http", b.Device)
	}
	switch b.Mode {
	case "", BootModeUEFI, BootModeLegacy:
	default:
		return fieldErr(path, "mode", "%q is not one of uefi, legacy (or empty to leave unchanged)", b.Mode)
	}
	if b.Persistent && b.EmulateOnce != nil && *b.EmulateOnce {
		return fieldErr(path, "emulateOnce", "only a one-time override is emulated; remove it or persistent")
	}
	if b.Device != BootHTTP {
		if b.URI != "" {
			return fieldErr(path, "uri", "only device http boots from a URI; remove it or set device http")
		}
		return nil
	}
	if b.Mode == BootModeLegacy {
		return fieldErr(path, "mode", "UEFI HTTP boot cannot boot in legacy mode: set uefi or leave it empty")
	}
	if err := checkBootURI(b.URI); err != "" {
		return fieldErr(path, "uri", "%s", err)
	}
	return nil
}

func (v *VirtualMediaAction) validate(path string) error {
	switch v.Kind {
	case "", MediaCD, MediaUSB:
	default:
		return fieldErr(path, "kind", "%q is not one of cd, usb", v.Kind)
	}
	if v.Eject && v.ImageURL != "" {
		return fieldErr(path, "", "imageURL and eject are both set: set one")
	}
	if !v.Eject && v.ImageURL == "" {
		return fieldErr(path, "", "set imageURL to insert or eject: true to eject")
	}
	if len(v.ImageURL) > maxImageURL {
		return fieldErr(path, "imageURL", "%d bytes, at most %d", len(v.ImageURL), maxImageURL)
	}
	if v.ImageURL != "" {
		// Check for credentials first ('@' anywhere, as a password with
		// '/' or '?' would not parse as userinfo) so that the error below,
		// which echoes the URL, never repeats a password.
		if strings.Contains(v.ImageURL, "@") {
			return fieldErr(path, "imageURL", "credentials in the image URL are not accepted")
		}
		u, err := url.Parse(v.ImageURL)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "nfs" && u.Scheme != "cifs") {
			return fieldErr(path, "imageURL", "%q is not an http(s), nfs or cifs URL with a host", truncate(v.ImageURL, 200))
		}
	}
	return nil
}

func (w *WaitForBootAction) validate(path string) error {
	if u := w.SystemUUID; u != "" && !looksLikeUUID(u) {
		return fieldErr(path, "systemUUID", "%q is not a UUID", truncate(u, 80))
	}
	return w.validatePolicy()
}

// fieldErr is the *FieldError of field, a path under the action at path
// ("" for the action itself).
func fieldErr(path, field, format string, args ...any) error {
	if field != "" {
		path += "." + field
	}
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Decode parses a JSON task spec strictly (unknown fields are errors) and
// validates it. Errors are a *[FieldError]; one about the JSON itself has
// an empty Path.
//
// Input over MaxSpecBytes, with an array of more than 100 elements, a string
// of more than 4096 bytes or nesting deeper than 16 is refused while it is
// read, before its content is allocated; the error names the limit.
func Decode(data []byte) (Spec, error) {
	var s Spec
	if err := strictjson.DecodeLimited(data, &s, specLimits); err != nil {
		return Spec{}, &FieldError{Msg: err.Error()}
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// MaxSpecBytes is the largest task spec Decode reads.
const MaxSpecBytes = 64 << 10

// specLimits are what Decode checks while reading.
var specLimits = strictjson.Limits{Bytes: MaxSpecBytes, String: 4096, Array: 100, Depth: 16}

// maxImageURL bounds VirtualMediaAction.ImageURL.
const maxImageURL = 2048

// maxBootURI bounds BootDeviceAction.URI (BMCs store a few hundred bytes
// at most; Redfish's HttpBootUri has no stated limit).
const maxBootURI = 2048

// checkBootURI returns what is wrong with an HTTP boot URI, or "".
func checkBootURI(uri string) string {
	switch {
	case uri == "":
		return "required for device http: the http:// or https:// URL of the EFI program to boot"
	case len(uri) > maxBootURI:
		return fmt.Sprintf("%d characters, at most %d", len(uri), maxBootURI)
	case strings.Contains(uri, "@"):
		// Checked before the error below, which echoes the URL, so that a
		// password is never repeated.
		return "credentials in the boot URI are not accepted"
	case strings.ContainsFunc(uri, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Sprintf("%q contains spaces or control characters", truncate(uri, 200))
	}
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" {
		return fmt.Sprintf("%q is not an http:// or https:// URL with a host", truncate(uri, 200))
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// looksLikeUUID accepts the canonical 8-4-4-4-12 hex form in any case.
func looksLikeUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return false
			}
		}
	}
	return true
}
