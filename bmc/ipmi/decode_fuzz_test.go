package ipmi

import (
	"testing"

	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// FuzzDecodeChassisStatus feeds arbitrary Get Chassis Status reply data to
// the decoder: it must not panic, and a decoded state is On or Off.
func FuzzDecodeChassisStatus(f *testing.F) {
	for _, seed := range [][]byte{
		{0x01, 0x00, 0x40},       // on
		{0x00, 0x10, 0x40},       // off, last power on by command
		{0x61, 0x00, 0x00, 0x00}, // on, restore policy bits, optional 4th byte
		{0x01},                   // truncated
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeChassisStatus(data)
		if err != nil {
			if st != bmc.PowerUnknown {
				t.Fatalf("error %v with state %q", err, st)
			}
			return
		}
		if len(data) < 3 {
			t.Fatalf("decoded %d bytes (% x) without error; the reply has 3 mandatory bytes", len(data), data)
		}
		want := bmc.PowerOff
		if data[0]&0x01 != 0 {
			want = bmc.PowerOn
		}
		if st != want {
			t.Fatalf("decode(% x) = %q, want %q", data, st, want)
		}
	})
}

// FuzzDecodeBootFlags feeds arbitrary Get System Boot Options (parameter 5)
// reply data to the decoder: it must not panic, and whatever it decodes
// must encode back to the same override.
func FuzzDecodeBootFlags(f *testing.F) {
	for _, seed := range [][]byte{
		{0x01, 0x05, 0xe0, 0x04, 0x00, 0x00, 0x00}, // valid, persistent, EFI, PXE
		{0x01, 0x05, 0x80, 0x08, 0x00, 0x00, 0x00}, // valid, once, legacy, disk
		{0x01, 0x05, 0x00, 0x04, 0x00, 0x00, 0x00}, // invalid: ipmi_sim's reply
		{0x01, 0x05, 0x80, 0x14, 0x00, 0x00, 0x00}, // CD-ROM
		{0x01, 0x05, 0x80, 0x18, 0x00, 0x00, 0x00}, // BIOS setup
		{0x01, 0x05, 0x80, 0x3c, 0x00, 0x00, 0x00}, // floppy: no equivalent
		{0x01, 0x04, 0x00, 0x00},                   // another parameter
		{0x01, 0x05, 0x80},                         // truncated
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := decodeBootFlags(data)
		if err != nil {
			return
		}
		sel, err := selectorFromDevice(o.Device)
		if err != nil {
			t.Fatalf("decoded device %q cannot be encoded: %v", o.Device, err)
		}
		if o.Device == bmc.BootDeviceNone {
			return
		}
		flags := types.BootOptionParam_BootFlags{
			BootFlagsValid:     true,
			Persist:            o.Persistent,
			BIOSBootType:       types.BIOSBootType(o.Mode == bmc.BootModeUEFI),
			BootDeviceSelector: sel,
		}
		again, err := decodeBootFlags(append([]byte{0x01, 0x05}, flags.Pack()...))
		if err != nil {
			t.Fatalf("re-decode of %+v: %v", o, err)
		}
		if again != o {
			t.Fatalf("decode(% x) = %+v, but encoding that decodes as %+v", data, o, again)
		}
	})
}
