package ipmi

// The BMC's replies that reach bmckit's own logic are decoded here, from the
// raw response data (after the completion code), so the fuzz targets in
// decode_fuzz_test.go cover exactly what runs on the wire. Field layouts are
// from the IPMI v2.0 specification, section 28 (Chassis commands).

import (
	"fmt"

	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// chassisStatus is what a Get Chassis Status reply says: the power state
// and the chassis' health from its fault bits.
type chassisStatus struct {
	power  bmc.PowerState
	health bmc.ResourceHealth
	// identify is the chassis identify state (byte 3 bits 5:4) as a
	// locator LED state, "" when the BMC does not report it (bit 6 clear,
	// as on ipmi_sim).
	identify bmc.LEDState
}

// chassisResourceID is the ResourceHealth.ID of the one resource IPMI rates.
const chassisResourceID = "chassis"

// The fault bits of Get Chassis Status (IPMI v2.0 table 28-3) and the
// health each means: a power subsystem fault has the server down or unable
// to change state (Critical); the others need a look but the server runs
// (Warning). "Last power event" bits (byte 2) are history, not faults.
var chassisFaults = []struct {
	set    func(*chassis.GetChassisStatusResponse) bool
	health bmc.Health
	name   string
}{
	{func(r *chassis.GetChassisStatusResponse) bool { return r.PowerOverload }, bmc.HealthCritical, "power overload"},
	{func(r *chassis.GetChassisStatusResponse) bool { return r.PowerFault }, bmc.HealthCritical, "main power fault"},
	{func(r *chassis.GetChassisStatusResponse) bool { return r.PowerControlFault }, bmc.HealthCritical, "power control fault"},
	{func(r *chassis.GetChassisStatusResponse) bool { return r.InterLock }, bmc.HealthWarning, "power interlock active"},
	{func(r *chassis.GetChassisStatusResponse) bool { return r.CollingFanFault }, bmc.HealthWarning, "cooling/fan fault"},
	{func(r *chassis.GetChassisStatusResponse) bool { return r.DriveFault }, bmc.HealthWarning, "drive fault"},
	{func(r *chassis.GetChassisStatusResponse) bool { return r.FrontPanelLockoutActive }, bmc.HealthWarning, "front panel lockout active"},
	{func(r *chassis.GetChassisStatusResponse) bool { return r.ChassisIntrusionActive }, bmc.HealthWarning, "chassis intrusion"},
}

// decodeChassisStatus decodes a Get Chassis Status (NetFn Chassis, 01h)
// reply. IPMI reports only on or off ("Current Power State" bit 0); it has
// no transitional states. The health is the worst of the fault bits set
// (OK when none is), the same for the chassis and everything in it (Health
// and Rollup), with the faults named.
func decodeChassisStatus(data []byte) (chassisStatus, error) {
	var res chassis.GetChassisStatusResponse
	if err := res.Unpack(data); err != nil {
		return chassisStatus{power: bmc.PowerUnknown}, fmt.Errorf("decode Get Chassis Status reply (% x): %w", data, err)
	}
	st := chassisStatus{power: bmc.PowerOff, health: bmc.ResourceHealth{ID: chassisResourceID, Health: bmc.HealthOK}}
	if res.PowerIsOn {
		st.power = bmc.PowerOn
	}
	for _, f := range chassisFaults {
		if !f.set(&res) {
			continue
		}
		st.health.Faults = append(st.health.Faults, f.name)
		if f.health == bmc.HealthCritical || st.health.Health == bmc.HealthOK {
			st.health.Health = f.health
		}
	}
	st.health.Rollup = st.health.Health
	if res.ChassisIdentifySupported {
		// 00b off, 01b temporary (timed) on, 10b indefinite on; 11b is
		// reserved (IPMI v2.0 table 28-3): read as on, as a BMC that sets
		// it shows something.
		st.identify = bmc.LEDOn
		if res.ChassisIdentifyState == chassis.ChassisIdentifyStateOff {
			st.identify = bmc.LEDOff
		}
	}
	return st, nil
}

// decodeBootFlags maps a Get System Boot Options reply for parameter 5
// (boot flags) to a boot override. Layout: parameter version, parameter
// selector (bit 7: parameter invalid/locked), five bytes of boot flags.
// A flag set without the "boot flags valid" bit means no override (the BMC
// cleared it after the boot it applied to, or nothing was set).
func decodeBootFlags(data []byte) (bmc.BootOverride, error) {
	var res chassis.GetSystemBootOptionsParamResponse
	if err := res.Unpack(data); err != nil {
		return bmc.BootOverride{}, fmt.Errorf("decode Get System Boot Options reply (% x): %w", data, err)
	}
	if res.ParamSelector != types.BootOptionParamSelector_BootFlags {
		return bmc.BootOverride{}, fmt.Errorf("decode Get System Boot Options reply: got parameter %d, asked for 5 (boot flags)", res.ParamSelector)
	}
	if len(res.ParamData) < 5 {
		return bmc.BootOverride{}, fmt.Errorf("decode boot flags: %d data bytes, want 5", len(res.ParamData))
	}
	var flags types.BootOptionParam_BootFlags
	if err := flags.Unpack(res.ParamData[:5]); err != nil {
		return bmc.BootOverride{}, fmt.Errorf("decode boot flags (% x): %w", res.ParamData[:5], err)
	}
	if !flags.BootFlagsValid {
		return bmc.BootOverride{Device: bmc.BootDeviceNone}, nil
	}
	dev, err := deviceFromSelector(flags.BootDeviceSelector)
	if err != nil {
		return bmc.BootOverride{}, err
	}
	o := bmc.BootOverride{Device: dev}
	o.Persistent = flags.Persist
	o.Mode = bmc.BootModeLegacy
	if flags.BIOSBootType == types.BIOSBootTypeEFI {
		o.Mode = bmc.BootModeUEFI
	}
	if dev == bmc.BootDeviceNone {
		o.Persistent, o.Mode = false, bmc.BootModeUnchanged
	}
	return o, nil
}

func deviceFromSelector(s types.BootDeviceSelector) (bmc.BootDevice, error) {
	switch s {
	case types.BootDeviceSelectorNoOverride:
		return bmc.BootDeviceNone, nil
	case types.BootDeviceSelectorForcePXE:
		return bmc.BootDevicePXE, nil
	case types.BootDeviceSelectorForceHardDrive, types.BootDeviceSelectorForceHardDriveSafe:
		return bmc.BootDeviceDisk, nil
	case types.BootDeviceSelectorForceCDROM, types.BootDeviceSelectorForceRemoteCDROM:
		return bmc.BootDeviceCDROM, nil
	case types.BootDeviceSelectorForceBIOSSetup:
		return bmc.BootDeviceBIOS, nil
	}
	return "", fmt.Errorf("boot device selector %#02x (%s) has no bmckit equivalent", uint8(s), s)
}

// selectorFromDevice maps a boot device to the IPMI boot device selector.
func selectorFromDevice(d bmc.BootDevice) (types.BootDeviceSelector, error) {
	switch d {
	case bmc.BootDeviceNone:
		return types.BootDeviceSelectorNoOverride, nil
	case bmc.BootDevicePXE:
		return types.BootDeviceSelectorForcePXE, nil
	case bmc.BootDeviceDisk:
		return types.BootDeviceSelectorForceHardDrive, nil
	case bmc.BootDeviceCDROM:
		return types.BootDeviceSelectorForceCDROM, nil
	case bmc.BootDeviceBIOS:
		return types.BootDeviceSelectorForceBIOSSetup, nil
	case bmc.BootDeviceUEFIHTTP:
		return 0, fmt.Errorf("boot device %q: IPMI has no UEFI HTTP boot selector: %w", d, bmc.ErrNotSupported)
	}
	return 0, fmt.Errorf("invalid boot device %q: want none, pxe, disk, cdrom or bios", d)
}

// rawResponse keeps a reply's data bytes for the decoders above. It
// implements go-ipmi's types.Response.
type rawResponse struct{ data []byte }

func (r *rawResponse) Unpack(data []byte) error {
	r.data = append(r.data[:0], data...)
	return nil
}

func (r *rawResponse) Format() string { return fmt.Sprintf("% x", r.data) }
