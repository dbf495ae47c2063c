package bmc

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// FirmwareImage is a firmware update to install: where the BMC (or the
// driver, for BMCs that only take a pushed image) fetches it, and which
// component it updates.
type FirmwareImage struct {
	// URI is where the image is fetched from: an absolute http or https
	// URL. It may carry credentials in its query string (a pre-signed
	// URL); drivers never log it or put it in an error other than as
	// [RedactURL] prints it. Required.
	URI string `json:"uri"`
	// Component is the firmware inventory ID of the component the image
	// updates (Redfish: the Id of a member of
	// UpdateService/FirmwareInventory, or of SoftwareInventory where the
	// BMC has no FirmwareInventory, e.g. "BMC" or "BIOS"; on a multi-node
	// BMC, one of the system's members): drivers name
	// it as the update's target where the protocol allows, and
	// [FirmwareUpdater.FirmwareVersion] reads its version to verify the
	// update. Optional for the update itself (the BMC picks the component
	// from the image); needed to verify.
	Component string `json:"component,omitempty"`
}

// Validate checks the image before anything is sent: URI must be an
// absolute http or https URL with a host. The error names the field and
// prints the URI redacted ([RedactURL]).
func (img FirmwareImage) Validate() error {
	if img.URI == "" {
		return Permanent(fmt.Errorf("firmware image URI: required"))
	}
	u, err := url.Parse(img.URI)
	if err != nil {
		return Permanent(fmt.Errorf("firmware image URI %s: not a URL", RedactURL(img.URI)))
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return Permanent(fmt.Errorf("firmware image URI %s: scheme %q: want http or https", RedactURL(img.URI), u.Scheme))
	}
	if u.Host == "" {
		return Permanent(fmt.Errorf("firmware image URI %s: no host", RedactURL(img.URI)))
	}
	if u.User != nil {
		return Permanent(fmt.Errorf("firmware image URI %s: user info in the URL is refused (the BMC would store and show it); use a pre-signed query or an image server that needs none", RedactURL(img.URI)))
	}
	if strings.ContainsAny(img.Component, "/?#") {
		return Permanent(fmt.Errorf("firmware image component %q: want a firmware inventory ID, not a path", img.Component))
	}
	return nil
}

// FirmwareTaskRef names the BMC task that carries out one firmware update
// (Redfish: a Task of the TaskService and its task monitor). It is what a
// caller stores as its intent, so that after a crash it follows the update
// it started instead of starting another. Plain strings, JSON-tagged: it
// goes into stored records as is. A zero ref names no task.
type FirmwareTaskRef struct {
	// TaskURI is the task resource (Redfish /redfish/v1/TaskService/Tasks/ID).
	TaskURI string `json:"taskURI,omitempty"`
	// MonitorURI is the task monitor the BMC answered the request with
	// (the Location header), where it differs from TaskURI. A ref with
	// only a MonitorURI naming the UpdateService is an update the BMC
	// accepted without naming a task (HPE iLO, BMCs without a
	// TaskService): its status is what the UpdateService shows (iLO's
	// Oem.Hpe.State), else Gone, and the version tells the rest.
	MonitorURI string `json:"monitorURI,omitempty"`
	// TaskID is the BMC's ID of the task.
	TaskID string `json:"taskID,omitempty"`
}

// IsZero reports whether r names no task.
func (r FirmwareTaskRef) IsZero() bool { return r == FirmwareTaskRef{} }

// String names the task for logs and errors.
func (r FirmwareTaskRef) String() string {
	switch {
	case r.TaskURI != "":
		return r.TaskURI
	case r.MonitorURI != "":
		return r.MonitorURI
	case r.TaskID != "":
		return "task " + r.TaskID
	}
	return "no task"
}

// FirmwareTaskState is where a firmware update task stands.
type FirmwareTaskState string

// Firmware task states. Drivers map their protocol's states to these
// (Redfish TaskState and TaskStatus; see docs/firmware.md).
const (
	// FirmwareTaskRunning: the update is in progress (new, starting,
	// downloading, flashing, pending, suspended): poll again.
	FirmwareTaskRunning FirmwareTaskState = "Running"
	// FirmwareTaskCompleted: the BMC reports the update done without
	// error. The new version may still need a reset to take effect
	// ([FirmwareTaskStatus.NeedsReset]); verify it with
	// [FirmwareUpdater.FirmwareVersion].
	FirmwareTaskCompleted FirmwareTaskState = "Completed"
	// FirmwareTaskFailed: the update ended in an error, was killed or
	// cancelled; the status's Messages say why.
	FirmwareTaskFailed FirmwareTaskState = "Failed"
	// FirmwareTaskGone: the BMC no longer knows the task (deleted, or
	// forgotten across a BMC reset, as some BMCs do once an update of
	// their own firmware activates). Whether the update landed can only
	// be told from the component's version.
	FirmwareTaskGone FirmwareTaskState = "Gone"
)

// Terminal reports whether the task will not change any more.
func (s FirmwareTaskState) Terminal() bool {
	return s == FirmwareTaskCompleted || s == FirmwareTaskFailed || s == FirmwareTaskGone
}

// FirmwareResetTarget says what a reset asked for by an update resets.
type FirmwareResetTarget string

// Reset targets.
const (
	// FirmwareResetUnspecified: the BMC asks for a reset without saying
	// of what. Most components other than the BMC itself activate when
	// the system restarts.
	FirmwareResetUnspecified FirmwareResetTarget = ""
	// FirmwareResetSystem: restart the system (a power cycle or reset).
	FirmwareResetSystem FirmwareResetTarget = "system"
	// FirmwareResetBMC: reset the BMC ([BMCResetter]).
	FirmwareResetBMC FirmwareResetTarget = "bmc"
)

// MaxFirmwareMessages bounds [FirmwareTaskStatus.Messages]: drivers keep
// the last ones, each shortened to 200 bytes.
const MaxFirmwareMessages = 8

// FirmwareTaskStatus is one reading of a firmware update task.
type FirmwareTaskStatus struct {
	State FirmwareTaskState `json:"state"`
	// Percent is the BMC's PercentComplete (0-100), or -1 when it does not
	// report one.
	Percent int `json:"percent"`
	// Messages are the task's last messages, "MessageId: text", oldest
	// first, at most MaxFirmwareMessages, with URLs redacted.
	Messages []string `json:"messages,omitempty"`
	// NeedsReset reports that the BMC asks for a reset before the new
	// firmware takes effect (Redfish: a task message
	// Update.*.AwaitToActivate or Base.*.ResetRequired). It may be set
	// while the task still runs (an update staged for the next boot) or
	// once it completed. The caller resets Reset, then reads the status
	// and the version again.
	NeedsReset bool `json:"needsReset,omitempty"`
	// Reset is what to reset when NeedsReset, where the BMC says.
	Reset FirmwareResetTarget `json:"reset,omitempty"`
}

// FirmwareUpdater is implemented by drivers that can install firmware. An
// update is long (30 minutes and more for some components) and carried
// out by the BMC: the driver starts it, names the BMC task doing it, reads
// that task's status, and reads a component's version to verify the
// result. The caller owns the waiting, the timeout and any reset.
//
// Crash safety is the caller's protocol, which the methods are shaped for:
// store the intent (the image) before StartFirmwareUpdate; store the ref it
// returns; after a restart, follow a stored ref with FirmwareUpdateStatus;
// without one (the crash came between the request and storing its
// answer, or the answer was lost), ask FindFirmwareUpdate before starting
// again. A BMC whose driver implements the interface but that offers no
// firmware update returns errors wrapping [ErrNotSupported]
// ([CapabilityFirmwareUpdate]). Methods are safe for concurrent use.
type FirmwareUpdater interface {
	// StartFirmwareUpdate asks the BMC to install img and returns the
	// task that carries it out. It sends the request once: it is never
	// retried, since a retry could start a second update. When it fails
	// in a way that leaves unknown whether the BMC received the request
	// (a timeout, a lost connection: [IsTransient] errors), call
	// FindFirmwareUpdate before starting again. Invalid images are
	// refused before any request ([FirmwareImage.Validate]).
	StartFirmwareUpdate(ctx context.Context, img FirmwareImage) (FirmwareTaskRef, error)

	// FindFirmwareUpdate looks among the BMC's tasks for one updating
	// with img (see docs/firmware.md for how each protocol matches), and
	// returns it with found set. Running tasks are preferred to finished
	// ones, the newest first. It changes nothing and may be retried.
	FindFirmwareUpdate(ctx context.Context, img FirmwareImage) (ref FirmwareTaskRef, found bool, err error)

	// FirmwareUpdateStatus reads the task ref names: one request where
	// the protocol allows, so it can be polled cheaply. A task the BMC no
	// longer knows reads FirmwareTaskGone, not an error. It changes
	// nothing and may be retried.
	FirmwareUpdateStatus(ctx context.Context, ref FirmwareTaskRef) (FirmwareTaskStatus, error)

	// FirmwareVersion reads the version the firmware inventory reports
	// for component (a firmware inventory ID). An unknown component is an
	// error naming it and the components there are; on a multi-node BMC
	// another system's component is unknown, and the components named are
	// the system's. It changes nothing and may be retried.
	FirmwareVersion(ctx context.Context, component string) (string, error)
}

// FirmwareTaskLister is implemented by drivers that can tell whether the
// BMC records every update it starts as a task it lists (Redfish: a
// TaskService, on a service that answers SimpleUpdate with a task; HPE
// iLO runs updates outside it). On such a BMC, FindFirmwareUpdate finding
// nothing shows that a start whose answer was lost (a 5xx, a timeout, a
// reset connection) started nothing, so it may be sent again. Where a
// driver lacks it or answers false, nothing can show that, and the job
// package's firmwareUpdate task never sends a second start: it fails with
// reason FirmwareStartUnknown (docs/firmware.md) unless the component
// already reports the wanted version.
type FirmwareTaskLister interface {
	ListsFirmwareTasks(ctx context.Context) (bool, error)
}
