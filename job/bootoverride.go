package job

import (
	"context"

	"github.com/bmckit/bmckit/bmc"
)

// The driver interfaces a boot override is set through, beyond
// bmc.BootOverrideSetter: shared by the bootDevice kind and the restore
// (bootrestore.go). How a job stores, compares and describes an override
// is job/internal/bootoverride's.

// bootOnceEmulator is implemented by drivers configured to have one-time
// overrides emulated (the Redfish driver's Options.EmulateBootOnce).
type bootOnceEmulator interface {
	EmulateBootOnce() bool
}

// bootReadBackSetter is implemented by drivers whose SetBootOverride reads
// the override back itself and fails when it differs (the Redfish driver):
// this variant leaves the judgement to the task, which reads the override
// (served from that read-back within the step, see bmc.ReadScope), sets it
// again and fails with VerificationFailed only after MaxVerifyResends.
type bootReadBackSetter interface {
	SetBootOverrideReadBack(ctx context.Context, o bmc.BootOverride) (bmc.BootOverride, error)
}
