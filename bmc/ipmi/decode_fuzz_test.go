package ipmi

import (
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// FuzzDecodeChassisStatus feeds arbitrary Get Chassis Status reply data to
// the decoder: it must not panic; a decoded state is On or Off; the health
// is OK exactly when no fault bit is set, Critical exactly when a power
// fault bit is, Rollup equals Health, and every fault named is a bit set.
func FuzzDecodeChassisStatus(f *testing.F) {
	for _, seed := range [][]byte{
		{0x01, 0x00, 0x40},       // on
		{0x01, 0x00, 0x60},       // identify supported, timed on
		{0x01, 0x00, 0x50},       // identify supported, indefinite on
		{0x01, 0x00, 0x00},       // ipmi_sim: identify state not reported
		{0x00, 0x10, 0x40},       // off, last power on by command
		{0x61, 0x00, 0x00, 0x00}, // on, restore policy bits, optional 4th byte
		{0x09, 0x00, 0x48},       // on, main power fault, fan fault
		{0x01, 0x00, 0x0f},       // on, fan, drive, lockout, intrusion
		{0x1f, 0x1f, 0x7f, 0xff}, // every bit
		{0x01},                   // truncated
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeChassisStatus(data)
		if err != nil {
			if st.power != bmc.PowerUnknown {
				t.Fatalf("error %v with state %q", err, st.power)
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
		if st.power != want {
			t.Fatalf("decode(% x) = %q, want %q", data, st.power, want)
		}
		h := st.health
		critical, warning := data[0]&0x1a != 0, data[0]&0x04 != 0 || data[2]&0x0f != 0
		switch {
		case critical && h.Health != bmc.HealthCritical,
			!critical && warning && h.Health != bmc.HealthWarning,
			!critical && !warning && (h.Health != bmc.HealthOK || len(h.Faults) != 0):
			t.Fatalf("decode(% x): health %q, faults %q", data, h.Health, h.Faults)
		}
		if h.Rollup != h.Health || h.ID != "chassis" {
			t.Fatalf("decode(% x): %+v; want Rollup = Health, ID chassis", data, h)
		}
		if n := bits(data[0]&0x1e) + bits(data[2]&0x0f); len(h.Faults) != n {
			t.Fatalf("decode(% x): faults %q, want %d", data, h.Faults, n)
		}
		wantLED := bmc.LEDState("")
		switch {
		case data[2]&0x40 != 0 && data[2]&0x30 == 0:
			wantLED = bmc.LEDOff
		case data[2]&0x40 != 0:
			wantLED = bmc.LEDOn
		}
		if st.identify != wantLED {
			t.Fatalf("decode(% x): identify %q, want %q", data, st.identify, wantLED)
		}
	})
}

func bits(b byte) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// FuzzDecodeSELInfo: Get SEL Info replies decode without panic, into
// counts that fit the reply's 16-bit fields.
func FuzzDecodeSELInfo(f *testing.F) {
	f.Add([]byte{0x51, 0x05, 0x00, 0x30, 0x3e, 0x02, 0x83, 0x16, 0x6b, 0x00, 0x00, 0x00, 0x00, 0x0a}) // ipmi_sim, 5 entries
	f.Add([]byte{0x51, 0x00, 0x00, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x02})
	f.Add([]byte{0x51, 0x05})
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := decodeSELInfo(data)
		if err != nil {
			return
		}
		if len(data) < 14 || info.entries < 0 || info.entries > 0xffff || info.capacity < info.entries || info.capacity > 0xffff+0xffff/selRecordSize {
			t.Fatalf("decodeSELInfo(% x) = %+v", data, info)
		}
	})
}

// FuzzDecodeSELEntry: a Get SEL Entry reply decodes into a record of 16
// bytes or an error, and every record decodes into a bounded entry: an ID
// that is the record's, a known severity and type, a time in UTC.
func FuzzDecodeSELEntry(f *testing.F) {
	for _, seed := range [][]byte{
		{0x02, 0x00, 0x01, 0x00, 0x02, 0xdf, 0x60, 0x00, 0x00, 0x20, 0x00, 0x04, 0x01, 0x30, 0x01, 0x52, 0x00, 0x00}, // ipmi_sim: threshold, pre-init time
		{0xff, 0xff, 0x05, 0x00, 0x02, 0x02, 0x83, 0x16, 0x6b, 0x41, 0x00, 0x04, 0x08, 0x02, 0x6f, 0x01, 0x00, 0x00}, // power supply failure
		{0xff, 0xff, 0x07, 0x00, 0x02, 0x02, 0x83, 0x16, 0x6b, 0x41, 0x00, 0x04, 0x08, 0x02, 0xef, 0x01, 0x00, 0x00}, // deasserted
		{0xff, 0xff, 0x09, 0x00, 0xc1, 0x02, 0x83, 0x16, 0x6b, 0x57, 0x01, 0x00, 1, 2, 3, 4, 5, 6},                   // OEM timestamped
		{0xff, 0xff, 0x0a, 0x00, 0xe0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13},                                    // OEM
		{0xff, 0xff, 0x0b, 0x00, 0x02, 0xff, 0xff, 0xff, 0xff, 0x20, 0x00, 0x04, 0xc3, 0x99, 0x75, 0x0f, 0xff, 0xff}, // OEM sensor and event type
		{0xff, 0xff, 0x0c, 0x00, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13},                                    // undefined type
		{0xff, 0xff, 0x01},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		next, rec, err := decodeSELEntry(data)
		if err != nil {
			return
		}
		if len(rec) != selRecordSize || next != uint16(data[0])|uint16(data[1])<<8 {
			t.Fatalf("decodeSELEntry(% x) = %#04x, % x", data, next, rec)
		}
		e := decodeSELRecord(rec)
		if want := strconv.Itoa(int(rec[0]) | int(rec[1])<<8); e.ID != want {
			t.Fatalf("record % x: ID %q, want %s", rec, e.ID, want)
		}
		switch e.Severity {
		case bmc.SeverityOK, bmc.SeverityWarning, bmc.SeverityCritical, bmc.SeverityUnknown:
		default:
			t.Fatalf("record % x: severity %q", rec, e.Severity)
		}
		if e.Type != "SEL" && e.Type != "Oem" || e.Message == "" || e.MessageID == "" || !utf8.ValidString(e.Message) {
			t.Fatalf("record % x: %+v", rec, e)
		}
		if !e.Created.IsZero() && e.Created.Location() != time.UTC {
			t.Fatalf("record % x: Created %v not in UTC", rec, e.Created)
		}
		b := e
		b.Bound()
		if b != e {
			t.Fatalf("record % x: entry %+v is not bounded", rec, e)
		}
	})
}

// FuzzDecodeSELReservation covers the Reserve SEL and Clear SEL replies.
func FuzzDecodeSELReservation(f *testing.F) {
	f.Add([]byte{0x01, 0x00})
	f.Add([]byte{0x01})
	f.Add([]byte{0x00})
	f.Add([]byte{0x31})
	f.Fuzz(func(t *testing.T, data []byte) {
		if id, err := decodeReservation(data); err == nil && (len(data) < 2 || id != uint16(data[0])|uint16(data[1])<<8) {
			t.Fatalf("decodeReservation(% x) = %#04x", data, id)
		}
		done, err := decodeErasure(data)
		if err == nil && (len(data) == 0 || done != (data[0]&0x0f == 1) || data[0]&0x0f > 1) {
			t.Fatalf("decodeErasure(% x) = %v", data, done)
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
