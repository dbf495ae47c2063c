package task

// BootRestoreState is where putting back a boot override stands (see
// [BootRestore]).
//
// +kubebuilder:validation:Enum=Pending;Restored;Failed;Kept
type BootRestoreState string

// Boot restore states.
const (
	// BootRestorePending: the override the task found is recorded, and the
	// task may have changed it; the job puts it back when that is due.
	BootRestorePending BootRestoreState = "Pending"
	// BootRestoreRestored: the override found is back (read back as such),
	// or the BMC still held it, so nothing had to be sent.
	BootRestoreRestored BootRestoreState = "Restored"
	// BootRestoreFailed: putting it back failed; Message says why and what
	// the BMC holds, if known.
	BootRestoreFailed BootRestoreState = "Failed"
	// BootRestoreKept: the job succeeded, and the override the task set
	// stays, as asked (a real one-time override is cleared by the boot that
	// uses it; a persistent one is what the task was for).
	BootRestoreKept BootRestoreState = "Kept"
)

// BootOverride is a boot override as a task read it from the BMC, in the
// terms of package bmc's BootOverride: Device "none", "pxe", "disk",
// "cdrom", "bios", "uefi-http" or a driver's own name for another target
// (e.g. "redfish:Usb"); Mode "uefi", "legacy" or "" (not reported).
type BootOverride struct {
	Device     string `json:"device"`
	Persistent bool   `json:"persistent,omitempty"`
	Mode       string `json:"mode,omitempty"`
	// URI is the UEFI HTTP boot URI of a "uefi-http" override. A URI with
	// credentials in it is not recorded (records never hold secrets).
	URI string `json:"uri,omitempty"`
}

// BootRestore is what a boot-device task found before it first changed the
// boot override, stored before the change (intent before action), and what
// became of putting it back. The job restores it after the boot an emulated
// one-time override was for (see [BootDeviceAction.EmulateOnce]), and
// whenever the job fails or is canceled after the change, emulated or not.
type BootRestore struct {
	// Emulated says the task emulated a one-time override: it set the
	// override persistent, to be put back after the boot it was for.
	Emulated bool `json:"emulated,omitempty"`
	// Previous is the override found before the first change.
	Previous BootOverride `json:"previous"`
	// State is Pending until the job put Previous back (Restored), gave up
	// (Failed), or succeeded with the task's override left in place (Kept).
	State BootRestoreState `json:"state"`
	// Attempts counts the tries to put Previous back.
	Attempts int `json:"attempts,omitempty"`
	// Message says what the last try did or why it failed.
	Message string `json:"message,omitempty"`
}
