package task

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/bmckit/bmckit/timestamp"
)

// FirmwareReset says whether a firmware update task carries out the reset
// the BMC asks for before the new firmware takes effect.
//
// +kubebuilder:validation:Enum="";auto;none
type FirmwareReset string

// Firmware reset policies.
const (
	// FirmwareResetAuto (the default): when the BMC asks for a reset
	// (Redfish: a task message such as Update.AwaitToActivate), the task
	// resets what the BMC names, once: the system (a power cycle, or power
	// on from off) or the BMC itself (a warm BMC reset); then it verifies
	// the version.
	FirmwareResetAuto FirmwareReset = "auto"
	// FirmwareResetNone: the task resets nothing. If the BMC asks for a
	// reset, the task fails with reason ResetRequired, naming what to reset;
	// the job's author adds the reset (a power or bmcReset task) and a
	// second firmwareUpdate task that then finds the version installed.
	FirmwareResetNone FirmwareReset = "none"
)

// FirmwareUpdateAction installs a firmware image through the BMC (Redfish
// UpdateService: SimpleUpdate with the image's URI, or a multipart push of
// the image where the BMC has only that), follows the BMC's task until it
// ends, does the reset the BMC asks for (Reset), and succeeds once the
// component reports Version. A component already at Version, or at one of
// SatisfiedBy, succeeds without an update. See docs/firmware.md.
//
// The BMC task's reference is stored before the task waits on it, so a
// runner resumed after a crash follows the update it started; when the
// crash came between the request and storing its answer, the runner looks
// for the update among the BMC's tasks before it would start another
// (docs/firmware.md, "Crash safety").
//
// +kubebuilder:validation:XValidation:rule="!has(self.satisfiedBy) || !(self.version in self.satisfiedBy)",message="satisfiedBy must not hold version: list the versions that satisfy the task besides it"
type FirmwareUpdateAction struct {
	// ImageURI is where the image is fetched from: an absolute http or https
	// URL, at most 2048 bytes, without user info (a pre-signed query string
	// is accepted; it is never logged or put in a condition).
	//
	// +kubebuilder:validation:MaxLength=2048
	ImageURI string `json:"imageURI"`
	// Component is the firmware inventory ID of the component the image
	// updates (Redfish: the Id of a member of UpdateService/FirmwareInventory,
	// e.g. "BMC" or "BIOS"); its version verifies the update.
	//
	// +kubebuilder:validation:MaxLength=253
	Component string `json:"component"`
	// Version is the component's version once the update took effect.
	//
	// +kubebuilder:validation:MaxLength=253
	Version string `json:"version"`
	// SatisfiedBy are versions that satisfy the task as well as Version:
	// the later versions of a path of updates A -> B -> C (the task for A
	// lists B and C; FirmwarePath builds such tasks), so a component
	// already past Version is not taken back to it. A component at one of
	// them succeeds without an update. At most 64, none empty, none equal
	// to Version, no duplicates (a set: the API server refuses a BMCJob
	// that repeats one).
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	SatisfiedBy []string `json:"satisfiedBy,omitempty"`
	// Reset is whether the task does the reset the BMC asks for. Defaults
	// to auto.
	Reset FirmwareReset `json:"reset,omitempty"`
}

// FirmwareStatus is what a firmware update task stored of the BMC's update.
type FirmwareStatus struct {
	// TaskURI, MonitorURI and TaskID name the BMC task carrying out the
	// update (bmc.FirmwareTaskRef), stored before the task waits on it.
	// Empty until the update was started or found.
	TaskURI    string `json:"taskURI,omitempty"`
	MonitorURI string `json:"monitorURI,omitempty"`
	TaskID     string `json:"taskID,omitempty"`
	// State is the BMC task's state when last read: Running, Completed,
	// Failed or Gone (bmc.FirmwareTaskState).
	State string `json:"state,omitempty"`
	// Percent is the BMC's completion percentage when last read; -1 when it
	// reports none.
	Percent int `json:"percent,omitempty"`
	// ResetTime is when the task sent the reset the BMC asked for; nil
	// until then.
	ResetTime *timestamp.Time `json:"resetTime,omitempty"`
	// ResetTarget is what it reset: "system" or "bmc".
	ResetTarget string `json:"resetTarget,omitempty"`
	// Version is the component's version when last read.
	Version string `json:"version,omitempty"`
	// StartSent is set, and stored, just before the update's start is
	// sent: a later attempt that holds no task reference knows the start
	// may have reached the BMC, and looks for its update instead of
	// starting another (docs/firmware.md).
	StartSent bool `json:"startSent,omitempty"`
}

// Satisfies reports whether version v satisfies the task: Version, or one
// of SatisfiedBy.
func (a *FirmwareUpdateAction) Satisfies(v string) bool {
	return v == a.Version || slices.Contains(a.SatisfiedBy, v)
}

// maxSatisfiedBy bounds FirmwareUpdateAction.SatisfiedBy.
const maxSatisfiedBy = 64

func (a *FirmwareUpdateAction) validateSatisfiedBy(path string) error {
	if len(a.SatisfiedBy) > maxSatisfiedBy {
		return fieldErr(path, "satisfiedBy", "%d versions, at most %d", len(a.SatisfiedBy), maxSatisfiedBy)
	}
	for i, v := range a.SatisfiedBy {
		f := fmt.Sprintf("satisfiedBy[%d]", i)
		switch {
		case v == "":
			return fieldErr(path, f, "empty: want a version")
		case len(v) > 253:
			return fieldErr(path, f, "%d bytes, at most 253", len(v))
		case v == a.Version:
			return fieldErr(path, f, "%q is the task's version", truncate(v, 80))
		case slices.Contains(a.SatisfiedBy[:i], v):
			return fieldErr(path, f, "%q is given twice", truncate(v, 80))
		}
	}
	return nil
}

// FirmwareStep is one update of a firmware path ([FirmwarePath]): the
// version it installs and the image that carries it.
type FirmwareStep struct {
	Version  string
	ImageURI string
}

// FirmwarePath returns the tasks that take component along a path of
// versions, steps in order (A -> B -> C): one firmwareUpdate task per
// step, each satisfied by the later steps' versions (SatisfiedBy). A
// server at C runs nothing, one at B only C's update, one at an older
// version (or one not on the path) all of them in order. The steps'
// versions must be non-empty and distinct; the tasks are validated as a
// job's would be (the error names the step: "steps[1].imageURI: ...").
func FirmwarePath(component string, steps ...FirmwareStep) ([]Spec, error) {
	if len(steps) == 0 {
		return nil, errors.New("task: a firmware path needs at least one step")
	}
	for i, st := range steps {
		if st.Version == "" {
			return nil, fieldErr(fmt.Sprintf("steps[%d]", i), "version", "required")
		}
		if j := slices.IndexFunc(steps[:i], func(o FirmwareStep) bool { return o.Version == st.Version }); j >= 0 {
			return nil, fieldErr(fmt.Sprintf("steps[%d]", i), "version", "%q is also steps[%d]'s: a path's versions are distinct", truncate(st.Version, 80), j)
		}
	}
	specs := make([]Spec, len(steps))
	for i, st := range steps {
		var later []string
		for _, l := range steps[i+1:] {
			later = append(later, l.Version)
		}
		specs[i] = Spec{FirmwareUpdate: &FirmwareUpdateAction{ImageURI: st.ImageURI, Component: component, Version: st.Version, SatisfiedBy: later}}
		if err := specs[i].FirmwareUpdate.validate(fmt.Sprintf("steps[%d]", i)); err != nil {
			return nil, err
		}
	}
	return specs, nil
}

func (a *FirmwareUpdateAction) describe() string {
	return "update firmware " + truncate(a.Component, 80) + " to " + truncate(a.Version, 80)
}

func (a *FirmwareUpdateAction) validate(path string) error {
	switch {
	case a.ImageURI == "":
		return fieldErr(path, "imageURI", "required")
	case len(a.ImageURI) > maxImageURL:
		return fieldErr(path, "imageURI", "%d bytes, at most %d", len(a.ImageURI), maxImageURL)
	case a.Component == "":
		return fieldErr(path, "component", "required: the firmware inventory ID whose version verifies the update")
	case strings.ContainsAny(a.Component, "/?#"):
		return fieldErr(path, "component", "%q is a path: want a firmware inventory ID", truncate(a.Component, 80))
	case len(a.Component) > 253:
		return fieldErr(path, "component", "%d bytes, at most 253", len(a.Component))
	case a.Version == "":
		return fieldErr(path, "version", "required: the version that verifies the update")
	case len(a.Version) > 253:
		return fieldErr(path, "version", "%d bytes, at most 253", len(a.Version))
	}
	switch a.Reset {
	case "", FirmwareResetAuto, FirmwareResetNone:
	default:
		return fieldErr(path, "reset", "%q is not one of auto, none", a.Reset)
	}
	if err := a.validateSatisfiedBy(path); err != nil {
		return err
	}
	// The URI is never echoed: its query may be a pre-signed credential.
	if strings.Contains(a.ImageURI, "@") {
		return fieldErr(path, "imageURI", "user info in the URL is not accepted (use a pre-signed query or an image server that needs none)")
	}
	u, err := url.Parse(a.ImageURI)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fieldErr(path, "imageURI", "not an absolute http or https URL with a host")
	}
	return nil
}
