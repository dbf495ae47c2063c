package ipmi

import (
	"errors"
	"reflect"
	"testing"
	"time"

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

func TestDecodeChassisStatusHealth(t *testing.T) {
	cases := []struct {
		data   []byte
		health bmc.Health
		faults []string
	}{
		{[]byte{0x01, 0x00, 0x40}, bmc.HealthOK, nil},
		{[]byte{0x01, 0x00, 0x48}, bmc.HealthWarning, []string{"cooling/fan fault"}},
		{[]byte{0x00, 0x00, 0x05}, bmc.HealthWarning, []string{"drive fault", "chassis intrusion"}},
		{[]byte{0x05, 0x00, 0x02}, bmc.HealthWarning, []string{"power interlock active", "front panel lockout active"}},
		{[]byte{0x08, 0x00, 0x08}, bmc.HealthCritical, []string{"main power fault", "cooling/fan fault"}},
		{[]byte{0x12, 0x00, 0x00}, bmc.HealthCritical, []string{"power overload", "power control fault"}},
		{[]byte{0x01, 0x1f, 0x00}, bmc.HealthOK, nil}, // last power events are history
	}
	for _, c := range cases {
		st, err := decodeChassisStatus(c.data)
		if err != nil {
			t.Fatalf("% x: %v", c.data, err)
		}
		want := bmc.ResourceHealth{ID: "chassis", Health: c.health, Rollup: c.health, Faults: c.faults}
		if !reflect.DeepEqual(st.health, want) {
			t.Errorf("% x: %+v, want %+v", c.data, st.health, want)
		}
	}
}

// TestDecodeSELRecord checks records against what ipmitool's "sel get"
// prints for them (ipmi_sim's records; names differ where go-ipmi follows
// freeipmi's tables).
func TestDecodeSELRecord(t *testing.T) {
	ts := time.Date(2026, 12, 7, 9, 57, 22, 0, time.UTC)
	le := func(id uint16, typ byte, rest ...byte) []byte {
		r := []byte{byte(id), byte(id >> 8), typ}
		return append(r, rest...)
	}
	u := uint32(ts.Unix())
	tsb := []byte{byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)}
	cases := []struct {
		rec  []byte
		want bmc.LogEntry
	}{
		{le(1, 0x02, append([]byte{0xdf, 0x60, 0, 0}, 0x20, 0x00, 0x04, 0x01, 0x30, 0x01, 0x52, 0x00, 0x00)...), bmc.LogEntry{
			ID: "1", Severity: bmc.SeverityCritical, Type: "SEL", MessageID: "SEL.Temperature.Threshold.0x02",
			Message: "Temperature #0x30: Lower Critical - going low, asserted (event data 52 00 00, generator 0x0020)",
		}},
		{le(5, 0x02, append(tsb, 0x41, 0x00, 0x04, 0x08, 0x02, 0x6f, 0x01, 0x00, 0x00)...), bmc.LogEntry{
			ID: "5", Created: ts, Severity: bmc.SeverityCritical, Type: "SEL", MessageID: "SEL.PowerSupply.0x01",
			Message: "Power Supply #0x02: Power Supply Failure detected, asserted (event data 01 00 00, generator 0x0041)",
		}},
		{le(6, 0x02, append(tsb, 0x41, 0x00, 0x04, 0x04, 0x41, 0x81, 0x59, 0x00, 0x00)...), bmc.LogEntry{
			ID: "6", Created: ts, Severity: bmc.SeverityWarning, Type: "SEL", MessageID: "SEL.Fan.Threshold.0x09",
			Message: "Fan #0x41: Upper Critical - going high, deasserted (event data 59 00 00, generator 0x0041)",
		}},
		{le(7, 0x02, append(tsb, 0x20, 0x00, 0x04, 0xc3, 0x99, 0x75, 0x0f, 0xff, 0xff)...), bmc.LogEntry{
			ID: "7", Created: ts, Type: "SEL", MessageID: "SEL.SensorType0xc3.EventType0x75.0x0f",
			Message: "Sensor type 0xc3 #0x99: event type 0x75 offset 0x0f, asserted (event data 0f ff ff, generator 0x0020)",
		}},
		{le(9, 0xc1, append(tsb, 0x57, 0x01, 0x00, 1, 2, 3, 4, 5, 6)...), bmc.LogEntry{
			ID: "9", Created: ts, Type: "Oem", MessageID: "SEL.OEM.0xc1",
			Message: "OEM record type 0xc1, manufacturer ID 0x000157, data 01 02 03 04 05 06",
		}},
		{le(10, 0xe0, 0xff, 0xff, 0xff, 0xff, 5, 6, 7, 8, 9, 10, 11, 12, 13), bmc.LogEntry{
			ID: "10", Type: "Oem", MessageID: "SEL.OEM.0xe0",
			Message: "OEM record type 0xe0 (no timestamp), data ff ff ff ff 05 06 07 08 09 0a 0b 0c 0d",
		}},
		{le(65534, 0x10, 0xff, 0xff, 0xff, 0xff, 5, 6, 7, 8, 9, 10, 11, 12, 13), bmc.LogEntry{
			ID: "65534", Type: "SEL", MessageID: "SEL.Record.0x10",
			Message: "record type 0x10, data ff ff ff ff 05 06 07 08 09 0a 0b 0c 0d",
		}},
	}
	for _, c := range cases {
		got := decodeSELRecord(c.rec)
		if !got.Created.Equal(c.want.Created) || got.Created.Location() != time.UTC {
			t.Errorf("% x: Created %v, want %v", c.rec, got.Created, c.want.Created)
		}
		got.Created, c.want.Created = time.Time{}, time.Time{}
		if got != c.want {
			t.Errorf("% x:\n got %+v\nwant %+v", c.rec, got, c.want)
		}
	}
}
