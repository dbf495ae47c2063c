package task

import (
	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/timestamp"
)

// Phase is where a task is in its life. The phases are what make a task
// crash-safe: Started is persisted before the BMC is touched, Requested after
// the BMC accepted the action, so a resumed runner knows whether to re-check
// or re-run.
//
// +kubebuilder:validation:Enum="";Started;Requested;Done
type Phase string

// Phases.
const (
	PhasePending   Phase = ""          // not started
	PhaseStarted   Phase = "Started"   // intent persisted; the action may or may not have been sent
	PhaseRequested Phase = "Requested" // the BMC accepted the action; verifying its effect
	PhaseDone      Phase = "Done"      // terminal; see Result
)

// Status is the observed state of one task.
type Status struct {
	// Conditions holds Completed and Running (see package conditions).
	//
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []conditions.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// Phase is the crash-safety marker described on [Phase].
	Phase Phase `json:"phase,omitempty"`
	// Result is empty until Completed=True.
	Result  conditions.Result `json:"result,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	Message string            `json:"message,omitempty"`
	// Attempts counts how many times the action was sent (or, for a resumed
	// task, re-checked).
	Attempts int `json:"attempts,omitempty"`
	// BootTries records each try of a wait-for-boot task (one boot
	// attempt each; more than one with WaitForBootPolicy.Retries), oldest
	// first. Empty for the other kinds.
	BootTries []BootTry `json:"bootTries,omitempty"`
	// StartTime is when the task was first started.
	StartTime *timestamp.Time `json:"startTime,omitempty"`
	// RequestTime is when the BMC last accepted the action.
	RequestTime *timestamp.Time `json:"requestTime,omitempty"`
	// CompletionTime is when the task reached a terminal state.
	CompletionTime *timestamp.Time `json:"completionTime,omitempty"`
	// NextAttemptTime is when a retry after a transient error is due.
	NextAttemptTime *timestamp.Time `json:"nextAttemptTime,omitempty"`
	// LastError is the last transient error seen, kept while retrying.
	LastError string `json:"lastError,omitempty"`
	// PowerState is the server's power state as the task read it ("On",
	// "Off", "PoweringOn", "PoweringOff", "Unknown": bmc.PowerState's
	// values), set by the tasks that read without changing it: powerStatus
	// (its result), reachable and bmcReset (the read that showed the BMC
	// answering). Empty for the other kinds. (No enum in the CRD schema: a
	// third-party driver may report another string, and a status the runner
	// wrote must never be refused.)
	PowerState string `json:"powerState,omitempty"`
	// BootRestore is set by a boot-device task that read the boot override
	// before changing it: what it found, whether it emulated a one-time
	// override, and whether the job put the override back. Nil for the
	// other kinds, and for a BMC that cannot report its boot override.
	BootRestore *BootRestore `json:"bootRestore,omitempty"`
	// LastResetBefore is the system's last reset time as the BMC reported it
	// (Redfish LastResetTime) just before a power cycle that cannot be read
	// back was sent (a wait-for-boot task's retry), stored with the cycle's
	// intent. A task resumed before the result of sending was stored
	// compares it with what the BMC reports then: another time means the
	// cycle landed, and it is not sent again. It is the BMC's clock, only
	// ever compared with the same BMC's reports. Nil when the BMC does not
	// report it (the cycle is then sent again after such a crash), and once
	// the result of sending is stored.
	LastResetBefore *timestamp.Time `json:"lastResetBefore,omitempty"`
	// Firmware is a firmware update task's record of the BMC's update: the
	// BMC task it follows (stored before it waits on it), its progress, the
	// reset it sent and the version it read. Nil for the other kinds.
	Firmware *FirmwareStatus `json:"firmware,omitempty"`
	// Inventory is what an inventory task read (bounded, see
	// InventoryAction). Nil for the other kinds.
	Inventory *bmc.Inventory `json:"inventory,omitempty"`
	// BIOS is what a bios task read or left pending. Nil for the other
	// kinds.
	BIOS *BIOSStatus `json:"bios,omitempty"`
	// ClearLog is what a clearLog task read before its clear (stored
	// before the clear is sent). Nil for the other kinds.
	ClearLog *ClearLogStatus `json:"clearLog,omitempty"`
	// SecureBoot is what a secureBoot task read last. Nil for the other
	// kinds.
	SecureBoot *SecureBootStatus `json:"secureBoot,omitempty"`
	// BootOrder is what a bootOrder task read last. Nil for the other
	// kinds.
	BootOrder *BootOrderStatus `json:"bootOrder,omitempty"`
	// Rotation is a rotateCredentials task's stage and accounts (never a
	// password). Nil for the other kinds.
	Rotation *RotationStatus `json:"rotation,omitempty"`
}

// BIOSStatus is what a bios task stored.
type BIOSStatus struct {
	// Attributes are the current values a task without Attributes read;
	// for the others, the current values of the attributes it names. At
	// most 1024 entries, each value at most 1024 bytes (Truncated says when
	// something was cut).
	Attributes bmc.BIOSAttributes `json:"attributes,omitempty"`
	// Pending are the values waiting for the next boot, as last read.
	Pending bmc.BIOSAttributes `json:"pending,omitempty"`
	// RebootRequired says the requested values are pending: they take
	// effect at the system's next boot (the job's next tasks reboot and
	// verify).
	RebootRequired bool `json:"rebootRequired,omitempty"`
	// Truncated is set when Attributes or Pending were cut to 1024 entries
	// or a value to 1024 bytes.
	Truncated bool `json:"truncated,omitempty"`
}

// Completed reports whether the task reached a terminal state.
func (s *Status) Completed() bool { return conditions.IsTrue(s.Conditions, conditions.TypeCompleted) }
