package ipmi

// Decoders of the SEL device's replies (IPMI v2.0 section 31) and of SEL
// records (section 32), fuzzed in decode_fuzz_test.go. go-ipmi's request
// types are used to send; its response types only where their Unpack checks
// the length, and its tables (sensor type names, event names and
// severities, from freeipmi's) to describe an event.

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bougou/go-ipmi/pkg/command/storage"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// SEL record IDs with a meaning of their own (section 31.5).
const (
	selFirst uint16 = 0x0000 // Get SEL Entry: the first record
	selLast  uint16 = 0xffff // Get SEL Entry: the last; as next record ID: no more
)

// selRecordSize is the size of every SEL record.
const selRecordSize = 16

// selInfo is what Get SEL Info (section 31.2) says.
type selInfo struct {
	entries  int
	capacity int // records the SEL holds at most: the used and the free space
}

func decodeSELInfo(data []byte) (selInfo, error) {
	var res storage.GetSELInfoResponse
	if err := res.Unpack(data); err != nil {
		return selInfo{}, fmt.Errorf("decode Get SEL Info reply (% x): %w", data, err)
	}
	n := int(res.Entries)
	return selInfo{entries: n, capacity: n + int(res.FreeBytes)/selRecordSize}, nil
}

// decodeSELEntry decodes a Get SEL Entry reply for a whole record: the
// next record's ID, then the 16-byte record.
func decodeSELEntry(data []byte) (next uint16, rec []byte, err error) {
	if len(data) < 2+selRecordSize {
		return 0, nil, fmt.Errorf("decode Get SEL Entry reply (% x): %d bytes, want the next record ID and a %d-byte record", data, len(data), selRecordSize)
	}
	return binary.LittleEndian.Uint16(data), data[2 : 2+selRecordSize], nil
}

// decodeReservation decodes a Reserve SEL reply (section 31.4).
func decodeReservation(data []byte) (uint16, error) {
	var res storage.ReserveSELResponse
	if err := res.Unpack(data); err != nil {
		return 0, fmt.Errorf("decode Reserve SEL reply (% x): %w", data, err)
	}
	return res.ReservationID, nil
}

// decodeErasure decodes a Clear SEL reply (section 31.9): whether the
// erase has completed (erasure progress, bits 3:0: 1h completed, 0h in
// progress).
func decodeErasure(data []byte) (done bool, err error) {
	var res storage.ClearSELResponse
	if err := res.Unpack(data); err != nil {
		return false, fmt.Errorf("decode Clear SEL reply (% x): %w", data, err)
	}
	switch res.ErasureProgressStatus & 0x0f {
	case 0x00:
		return false, nil
	case 0x01:
		return true, nil
	}
	return false, fmt.Errorf("decode Clear SEL reply: erasure progress %#02x, want 0 (in progress) or 1 (completed)", res.ErasureProgressStatus&0x0f)
}

// selTime is a SEL timestamp: zero for "unspecified" (FFFFFFFFh) and for
// times counted from the BMC's initialization rather than from the epoch
// (00000000h-20000000h, section 37: the BMC's clock was not set, ipmitool's
// "Pre-Init").
func selTime(ts uint32) time.Time {
	if ts == 0xffffffff || ts <= 0x20000000 {
		return time.Time{}
	}
	return time.Unix(int64(ts), 0).UTC()
}

// decodeSELRecord maps a 16-byte SEL record (section 32) to a log entry:
//
//   - a system event record (type 02h): the time, the sensor's type and
//     number, the event (go-ipmi's names and severities, after freeipmi's
//     tables; unknown events have an unknown severity), its direction, the
//     event data and the generator in Message; MessageID
//     "SEL.<SensorType>.<offset>" for a sensor-specific event (event type
//     6Fh), "SEL.<SensorType>.Threshold.<offset>" for a threshold event,
//     "SEL.<SensorType>.EventType<type>.<offset>" for the others, e.g.
//     "SEL.PowerSupply.0x01", "SEL.Temperature.Threshold.0x09";
//   - an OEM record (C0h-DFh with a time, E0h-FFh without): Type "Oem", its
//     bytes in Message, MessageID "SEL.OEM.<type>";
//   - any other type: its bytes in Message, MessageID "SEL.Record.<type>".
//
// ID is the record ID in decimal.
func decodeSELRecord(rec []byte) bmc.LogEntry {
	if len(rec) != selRecordSize {
		// Not reached: decodeSELEntry cuts records to size.
		return bmc.LogEntry{Message: fmt.Sprintf("SEL record of %d bytes: % x", len(rec), rec)}
	}
	id := binary.LittleEndian.Uint16(rec)
	typ := rec[2]
	e := bmc.LogEntry{ID: strconv.Itoa(int(id)), Type: "SEL"}
	switch {
	case typ == 0x02:
		systemEvent(&e, rec)
	case typ >= 0xc0 && typ <= 0xdf:
		e.Type, e.MessageID = "Oem", fmt.Sprintf("SEL.OEM.0x%02x", typ)
		e.Created = selTime(binary.LittleEndian.Uint32(rec[3:]))
		mfr := uint32(rec[7]) | uint32(rec[8])<<8 | uint32(rec[9])<<16
		e.Message = fmt.Sprintf("OEM record type 0x%02x, manufacturer ID 0x%06x, data % x", typ, mfr, rec[10:])
	case typ >= 0xe0:
		e.Type, e.MessageID = "Oem", fmt.Sprintf("SEL.OEM.0x%02x", typ)
		e.Message = fmt.Sprintf("OEM record type 0x%02x (no timestamp), data % x", typ, rec[3:])
	default:
		e.MessageID = fmt.Sprintf("SEL.Record.0x%02x", typ)
		e.Message = fmt.Sprintf("record type 0x%02x, data % x", typ, rec[3:])
	}
	return e
}

// systemEvent fills e from a system event record: timestamp (bytes 3-6),
// generator ID (7-8), EvM revision (9), sensor type (10), sensor number
// (11), event direction and type (12), event data 1-3 (13-15).
func systemEvent(e *bmc.LogEntry, rec []byte) {
	e.Created = selTime(binary.LittleEndian.Uint32(rec[3:]))
	gen := binary.LittleEndian.Uint16(rec[7:])
	st, num := types.SensorType(rec[10]), rec[11]
	deassert := rec[12]&0x80 != 0
	et := types.EventReadingType(rec[12] & 0x7f)
	data := types.EventData{EventData1: rec[13], EventData2: rec[14], EventData3: rec[15]}
	offset := data.EventReadingOffset()

	sensor := st.String()
	if _, known := sensorTypeKnown(st); !known {
		sensor = fmt.Sprintf("Sensor type 0x%02x", uint8(st))
	}
	event := fmt.Sprintf("event type 0x%02x offset 0x%02x", uint8(et), offset)
	e.Severity = bmc.SeverityUnknown
	if ev := et.EventForOffset(st, offset); ev != nil {
		event = ev.EventName
		e.Severity = eventSeverity(et.EventSeverity(st, data, types.EventDir(deassert)))
	}
	dir := "asserted"
	if deassert {
		dir = "deasserted"
	}
	e.Message = fmt.Sprintf("%s #0x%02x: %s, %s (event data %02x %02x %02x, generator 0x%04x)",
		sensor, num, event, dir, data.EventData1, data.EventData2, data.EventData3, gen)

	name, _ := sensorTypeKnown(st)
	switch et {
	case types.EventReadingTypeSensorSpecific:
		e.MessageID = fmt.Sprintf("SEL.%s.0x%02x", name, offset)
	case types.EventReadingTypeThreshold:
		e.MessageID = fmt.Sprintf("SEL.%s.Threshold.0x%02x", name, offset)
	default:
		e.MessageID = fmt.Sprintf("SEL.%s.EventType0x%02x.0x%02x", name, uint8(et), offset)
	}
}

// sensorTypeKnown is the sensor type's name as a MessageID part (go-ipmi's
// name without spaces and punctuation, e.g. "PowerSupply"), and whether
// IPMI defines the type; an undefined or OEM type is "SensorType0xc0".
func sensorTypeKnown(st types.SensorType) (string, bool) {
	name := st.String()
	if name == "unknown" {
		return fmt.Sprintf("SensorType0x%02x", uint8(st)), false
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, name), true
}

// eventSeverity maps go-ipmi's (freeipmi's) event severities to bmc's:
// Info and OK are OK; Warning, Degraded and Non-fatal are Warning.
func eventSeverity(s types.EventSeverity) bmc.Severity {
	switch s {
	case types.EventSeverityInfo, types.EventSeverityOK:
		return bmc.SeverityOK
	case types.EventSeverityWarning, types.EventSeverityDegraded, types.EventSeverityNonFatal:
		return bmc.SeverityWarning
	case types.EventSeverityCritical:
		return bmc.SeverityCritical
	}
	return bmc.SeverityUnknown
}
