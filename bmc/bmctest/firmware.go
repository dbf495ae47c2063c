package bmctest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// FirmwareTarget is what the FirmwareUpdate/... subtests install: an image
// the peer accepts and the version it installs. The peer's component must
// not be at Version already (the suite checks the version changes).
type FirmwareTarget struct {
	// Image is the update (its Component set, to verify by version).
	Image bmc.FirmwareImage
	// Version is what the firmware inventory reports for Image.Component
	// once the update took effect.
	Version string
}

// firmwareUpdate checks bmc.FirmwareUpdater:
//
//   - InstallAndVerify: start, follow the task to its end (doing the reset
//     the BMC asks for), and read the new version;
//   - FindAfterStart: a started update is found by its image, through a
//     new session where Target.Dial is set (a restarted client);
//   - FindNothing: an image never started is not found;
//   - InvalidImage: non-http(s), host-less and empty URIs are refused with
//     a permanent error naming the field.
func (s *suite) firmwareUpdate(t *testing.T, path string) {
	s.run(t, path, "InstallAndVerify", func(tc *tcase) {
		fu, fw := tc.firmware()
		before, err := fu.FirmwareVersion(tc.ctx(), fw.Image.Component)
		tc.noErr("FirmwareVersion before the update", err)
		if before == fw.Version {
			tc.Fatalf("component %s is at %s already; Target.Firmware must install another version", fw.Image.Component, before)
		}
		ref, err := fu.StartFirmwareUpdate(tc.ctx(), fw.Image)
		tc.noErr("StartFirmwareUpdate", err)
		if ref.IsZero() {
			tc.Fatalf("StartFirmwareUpdate returned no task ref")
		}
		st := tc.followFirmware(fu, ref)
		if st.State != bmc.FirmwareTaskCompleted && st.State != bmc.FirmwareTaskGone {
			tc.Fatalf("the update task ended %s: %s", st.State, strings.Join(st.Messages, "; "))
		}
		tc.poll(fmt.Sprintf("FirmwareVersion(%s) to read %s", fw.Image.Component, fw.Version), func() (bool, string) {
			v, err := fu.FirmwareVersion(tc.ctx(), fw.Image.Component)
			if err != nil {
				if !bmc.IsTransient(err) {
					tc.Fatalf("FirmwareVersion after the update: permanent error: %v", err)
				}
				return false, err.Error()
			}
			return v == fw.Version, v
		})
	})
	s.run(t, path, "FindAfterStart", func(tc *tcase) {
		fu, fw := tc.firmware()
		ref, err := fu.StartFirmwareUpdate(tc.ctx(), fw.Image)
		tc.noErr("StartFirmwareUpdate", err)
		finder := fu
		if tc.target.Dial != nil {
			d, err := tc.target.Dial(tc.ctx(), tc.target.Credentials)
			tc.noErr("Dial a second session", err)
			defer func() { _ = d.Close(tc.ctx()) }()
			if finder, _ = d.(bmc.FirmwareUpdater); finder == nil {
				tc.Fatalf("a driver from Target.Dial (%T) does not implement bmc.FirmwareUpdater", d)
			}
		}
		got, found, err := finder.FindFirmwareUpdate(tc.ctx(), fw.Image)
		tc.noErr("FindFirmwareUpdate", err)
		if !found {
			tc.Fatalf("FindFirmwareUpdate did not find the update StartFirmwareUpdate started (%s)", ref)
		}
		if !sameTask(got, ref) {
			tc.Fatalf("FindFirmwareUpdate found %s, StartFirmwareUpdate started %s", got, ref)
		}
		tc.followFirmware(fu, got)
	})
	s.run(t, path, "FindNothing", func(tc *tcase) {
		fu, fw := tc.firmware()
		img := fw.Image
		img.URI = strings.TrimRight(img.URI, "/") + "-bmctest-never-started"
		_, found, err := fu.FindFirmwareUpdate(tc.ctx(), img)
		tc.noErr("FindFirmwareUpdate", err)
		if found {
			tc.Fatalf("FindFirmwareUpdate found a task for %s, which was never started", bmc.RedactURL(img.URI))
		}
	})
	s.run(t, path, "InvalidImage", func(tc *tcase) {
		fu, fw := tc.firmware()
		for _, uri := range []string{"", "ftp://images.example/fw.bin", "http:///fw.bin", "fw.bin"} {
			img := bmc.FirmwareImage{URI: uri, Component: fw.Image.Component}
			_, err := fu.StartFirmwareUpdate(tc.ctx(), img)
			what := fmt.Sprintf("StartFirmwareUpdate(%q)", uri)
			if err == nil {
				tc.Fatalf("%s succeeded; want a permanent error naming the image URI", what)
			}
			tc.requireOpError(what, err)
			if bmc.IsTransient(err) {
				tc.Errorf("%s: error %q is transient; an invalid image is permanent", what, err)
			}
			if !strings.Contains(err.Error(), "firmware image") {
				tc.Errorf("%s: error %q does not name the field (firmware image URI)", what, err)
			}
		}
	})
}

// firmware returns the driver as a FirmwareUpdater and the image, or skips.
func (tc *tcase) firmware() (bmc.FirmwareUpdater, FirmwareTarget) {
	tc.Helper()
	fu, ok := tc.drv.(bmc.FirmwareUpdater)
	if !ok {
		tc.Skipf("%T does not implement bmc.FirmwareUpdater", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityFirmwareUpdate) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityFirmwareUpdate, bmc.CapabilityFirmwareUpdate)
	}
	if tc.target.Firmware == nil {
		tc.Skipf("Target.Firmware is not set: no image to install")
	}
	return fu, *tc.target.Firmware
}

// followFirmware polls the task until it ends, doing the reset it asks for
// once, and returns its last status.
func (tc *tcase) followFirmware(fu bmc.FirmwareUpdater, ref bmc.FirmwareTaskRef) bmc.FirmwareTaskStatus {
	tc.Helper()
	var st bmc.FirmwareTaskStatus
	reset := false
	tc.poll("the firmware update task "+ref.String()+" to end", func() (bool, string) {
		var err error
		st, err = fu.FirmwareUpdateStatus(tc.ctx(), ref)
		if err != nil {
			if !bmc.IsTransient(err) {
				tc.Fatalf("FirmwareUpdateStatus(%s): permanent error: %v", ref, err)
			}
			return false, err.Error()
		}
		tc.checkFirmwareStatus(st)
		if st.NeedsReset && !reset {
			reset = true
			tc.firmwareReset(st.Reset)
		}
		return st.State.Terminal(), fmt.Sprintf("%s %d%% %s", st.State, st.Percent, strings.Join(st.Messages, "; "))
	})
	return st
}

func (tc *tcase) checkFirmwareStatus(st bmc.FirmwareTaskStatus) {
	tc.Helper()
	switch st.State {
	case bmc.FirmwareTaskRunning, bmc.FirmwareTaskCompleted, bmc.FirmwareTaskFailed, bmc.FirmwareTaskGone:
	default:
		tc.Fatalf("FirmwareUpdateStatus returned state %q, not one of bmc's FirmwareTaskState constants", st.State)
	}
	if st.Percent < -1 || st.Percent > 100 {
		tc.Fatalf("FirmwareUpdateStatus returned percent %d; want 0-100, or -1 when unknown", st.Percent)
	}
	if len(st.Messages) > bmc.MaxFirmwareMessages {
		tc.Fatalf("FirmwareUpdateStatus returned %d messages; at most bmc.MaxFirmwareMessages (%d)", len(st.Messages), bmc.MaxFirmwareMessages)
	}
}

// firmwareReset does the reset an update asks for: the BMC's for
// FirmwareResetBMC, else a power cycle (a reset where cycle is missing).
func (tc *tcase) firmwareReset(target bmc.FirmwareResetTarget) {
	tc.Helper()
	if target == bmc.FirmwareResetBMC {
		r, ok := tc.drv.(bmc.BMCResetter)
		if !ok {
			tc.Fatalf("the update asks for a BMC reset, and %T does not implement bmc.BMCResetter", tc.drv)
		}
		rt := bmc.BMCResetWarm
		if tc.opts.lacks(bmc.CapabilityBMCResetWarm) {
			rt = bmc.BMCResetCold
		}
		tc.noErr(fmt.Sprintf("ResetBMC(%s) to activate the firmware", rt), r.ResetBMC(tc.ctx(), rt))
		return
	}
	action := bmc.PowerActionCycle
	if tc.opts.lacks(bmc.CapabilityPowerCycle) {
		action = bmc.PowerActionReset
	}
	tc.ensurePower(bmc.PowerOn)
	tc.noErr(fmt.Sprintf("SetPower(%s) to activate the firmware", action), tc.drv.SetPower(tc.ctx(), action))
	tc.waitPower(bmc.PowerOn)
}

// sameTask reports whether two refs name one task: same task URI, or same
// ID, or same monitor, where both have it.
func sameTask(a, b bmc.FirmwareTaskRef) bool {
	eq := func(x, y string) bool { return x != "" && strings.TrimRight(x, "/") == strings.TrimRight(y, "/") }
	return eq(a.TaskURI, b.TaskURI) || eq(a.TaskID, b.TaskID) || eq(a.MonitorURI, b.MonitorURI)
}

// checkFirmwareUnsupported is Unsupported/firmware-update.
func (tc *tcase) checkFirmwareUnsupported() {
	tc.Helper()
	fu, ok := tc.drv.(bmc.FirmwareUpdater)
	if !ok {
		tc.Skipf("%T does not implement bmc.FirmwareUpdater", tc.drv)
	}
	img := bmc.FirmwareImage{URI: "http://127.0.0.1:8080/bmctest-firmware.bin", Component: "BIOS"}
	if tc.target.Firmware != nil {
		img = tc.target.Firmware.Image
	}
	_, err := fu.StartFirmwareUpdate(tc.ctx(), img)
	tc.requireNotSupported("StartFirmwareUpdate", err)
	_, _, err = fu.FindFirmwareUpdate(tc.ctx(), img)
	tc.requireNotSupported("FindFirmwareUpdate", err)
	_, err = fu.FirmwareVersion(tc.ctx(), img.Component)
	tc.requireNotSupported("FirmwareVersion", err)
}
