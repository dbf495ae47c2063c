package ipmi

import (
	"errors"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func TestDecodeBootFlags(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want bmc.BootOverride
	}{
		{"pxe persistent uefi", []byte{1, 5, 0xe0, 0x04, 0, 0, 0}, bmc.BootOverride{Device: bmc.BootDevicePXE, Persistent: true, Mode: bmc.BootModeUEFI}},
		{"disk once legacy", []byte{1, 5, 0x80, 0x08, 0, 0, 0}, bmc.BootOverride{Device: bmc.BootDeviceDisk, Mode: bmc.BootModeLegacy}},
		{"cdrom", []byte{1, 5, 0x80, 0x14, 0, 0, 0}, bmc.BootOverride{Device: bmc.BootDeviceCDROM, Mode: bmc.BootModeLegacy}},
		{"bios", []byte{1, 5, 0xa0, 0x18, 0, 0, 0}, bmc.BootOverride{Device: bmc.BootDeviceBIOS, Mode: bmc.BootModeUEFI}},
		{"valid bit clear means none", []byte{1, 5, 0x60, 0x04, 0, 0, 0}, bmc.BootOverride{Device: bmc.BootDeviceNone}},
		{"no override", []byte{1, 5, 0xc0, 0x00, 0, 0, 0}, bmc.BootOverride{Device: bmc.BootDeviceNone}},
	}
	for _, c := range cases {
		got, err := decodeBootFlags(c.data)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	for name, data := range map[string][]byte{
		"truncated":       {1, 5, 0x80},
		"other parameter": {1, 4, 0x80, 0x04, 0, 0, 0},
		"floppy":          {1, 5, 0x80, 0x3c, 0, 0, 0},
	} {
		if got, err := decodeBootFlags(data); err == nil {
			t.Errorf("%s: decoded %+v, want an error", name, got)
		}
	}
}

func TestSelectorFromDevice(t *testing.T) {
	if _, err := selectorFromDevice(bmc.BootDeviceUEFIHTTP); !errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("uefi-http: %v, want ErrNotSupported", err)
	}
	_, err := selectorFromDevice("floppy")
	if err == nil || errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("floppy: %v, want a validation error", err)
	}
}
