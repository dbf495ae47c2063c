package ipmi

// Decoders of the SDR repository's replies (IPMI v2.0 section 33), of
// sensor data records (section 43) and of Get Sensor Reading (section
// 35.14), fuzzed in sensors_fuzz_test.go. go-ipmi parses the records
// (types.ParseSDR), converts raw readings (SDRFull.ConvertReading) and
// unpacks Get Sensor Reading; what is written here is the mapping to
// bmckit's types: the threshold bits to a Health (go-ipmi's
// GetSensorReadingResponse.ThresholdStatus names UCR for every bit set, so
// the bits are read instead), the unit to UCUM, the kind.

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/bougou/go-ipmi/pkg/command/sensor"
	"github.com/bougou/go-ipmi/pkg/command/storage"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// sdrRepoKey is what Get SDR Repository Info says that changes when the
// repository does: the driver reads the records again when it differs
// from the cached one.
type sdrRepoKey struct {
	records       uint16
	added, erased uint32 // the raw timestamps
}

func decodeSDRRepoInfo(data []byte) (sdrRepoKey, error) {
	var res storage.GetSDRRepoInfoResponse
	if err := res.Unpack(data); err != nil {
		return sdrRepoKey{}, fmt.Errorf("decode Get SDR Repository Info reply (% x): %w", data, err)
	}
	// go-ipmi turns the timestamps into times; the raw values compare
	// exactly (FFFFFFFFh "never" included).
	return sdrRepoKey{records: res.RecordCount, added: binary.LittleEndian.Uint32(data[5:9]), erased: binary.LittleEndian.Uint32(data[9:13])}, nil
}

// sdrHeaderSize is a record's header: record ID, SDR version, record
// type, length of the rest.
const sdrHeaderSize = 5

// sdrRecordLength is the whole record's size from the first bytes of a
// Get SDR reply's record data.
func sdrRecordLength(head []byte) (int, error) {
	if len(head) < sdrHeaderSize {
		return 0, fmt.Errorf("decode SDR record header (% x): %d bytes, want %d", head, len(head), sdrHeaderSize)
	}
	return sdrHeaderSize + int(head[4]), nil
}

// decodeGetSDR decodes a Get SDR reply: the next record ID, then record
// data.
func decodeGetSDR(data []byte) (next uint16, rec []byte, err error) {
	var res storage.GetSDRResponse
	if err := res.Unpack(data); err != nil {
		return 0, nil, fmt.Errorf("decode Get SDR reply (% x): %w", data, err)
	}
	return res.NextRecordID, res.RecordData, nil
}

// sdrSensor is what the driver keeps of a full or compact sensor record.
type sdrSensor struct {
	name      string
	number    uint8
	owner     uint8 // the owner's slave address (7-bit << 1)
	lun       uint8
	kind      bmc.SensorKind
	unit      string
	threshold bool           // event/reading type 01h: the reading carries threshold bits
	full      *types.SDRFull // nil for a compact record: no conversion factors
}

// decodeSDRRecord decodes one whole record. ok is false for records that
// describe no readable sensor (event-only, locators, OEM...).
func decodeSDRRecord(rec []byte) (s sdrSensor, ok bool, err error) {
	n, err := sdrRecordLength(rec)
	if err != nil {
		return sdrSensor{}, false, err
	}
	if len(rec) < n {
		return sdrSensor{}, false, fmt.Errorf("decode SDR record %#04x: %d bytes, its header says %d", binary.LittleEndian.Uint16(rec), len(rec), n)
	}
	typ := types.SDRRecordType(rec[3])
	if typ != types.SDRRecordTypeFullSensor && typ != types.SDRRecordTypeCompactSensor {
		return sdrSensor{}, false, nil
	}
	sdr, err := types.ParseSDR(rec[:n], 0)
	if err != nil {
		return sdrSensor{}, false, fmt.Errorf("decode SDR record %#04x (type %#02x): %w", binary.LittleEndian.Uint16(rec), rec[3], err)
	}
	var (
		gen   types.GeneratorID
		num   types.SensorNumber
		id    []byte
		stype types.SensorType
		ert   types.EventReadingType
		unit  types.SensorUnit
	)
	if sdr.Full != nil {
		f := sdr.Full
		gen, num, id, stype, ert, unit = f.GeneratorID, f.SensorNumber, f.IDStringBytes, f.SensorType, f.SensorEventReadingType, f.SensorUnit
		s.full = f
	} else {
		c := sdr.Compact
		gen, num, id, stype, ert, unit = c.GeneratorID, c.SensorNumber, c.IDStringBytes, c.SensorType, c.SensorEventReadingType, c.SensorUnit
	}
	s.name = strings.TrimRight(strings.TrimSpace(string(id)), "\x00")
	s.number, s.owner, s.lun = uint8(num), gen.OwnerID(), gen.LUN()
	s.threshold = ert.IsThreshold()
	s.unit = sensorUnit(unit)
	s.kind = sensorKind(stype, unit)
	return s, true, nil
}

// sensorUnit is the unit's UCUM code for the common ones, else go-ipmi's
// name of it ("" for a discrete sensor).
func sensorUnit(u types.SensorUnit) string {
	if !u.IsAnalog() {
		return ""
	}
	if u.ModifierRelation == types.SensorModifierRelation_None && u.RateUnit == types.SensorRateUnit_None {
		if u.Percentage && u.BaseUnit == types.SensorUnitType_Unspecified {
			return bmc.UnitPercent
		}
		if !u.Percentage {
			switch u.BaseUnit {
			case types.SensorUnitType_DegreesC:
				return bmc.UnitCelsius
			case types.SensorUnitType_Volts:
				return bmc.UnitVolts
			case types.SensorUnitType_Amps:
				return bmc.UnitAmps
			case types.SensorUnitType_Watts:
				return bmc.UnitWatts
			case types.SensorUnitType_RPM:
				return bmc.UnitRPM
			}
		}
	}
	return u.String()
}

// sensorKind: the unit first (Dell's "Pwr Consumption" is a current-type
// sensor in Watts), then the sensor type.
func sensorKind(t types.SensorType, u types.SensorUnit) bmc.SensorKind {
	if u.IsAnalog() && u.ModifierRelation == types.SensorModifierRelation_None {
		switch u.BaseUnit {
		case types.SensorUnitType_DegreesC, types.SensorUnitType_DegreesF, types.SensorUnitType_DegreesK:
			return bmc.SensorTemperature
		case types.SensorUnitType_Volts:
			return bmc.SensorVoltage
		case types.SensorUnitType_Amps:
			return bmc.SensorCurrent
		case types.SensorUnitType_Watts:
			return bmc.SensorPower
		case types.SensorUnitType_RPM:
			return bmc.SensorFan
		}
	}
	switch t {
	case types.SensorTypeTemperature:
		return bmc.SensorTemperature
	case types.SensorTypeVoltage:
		return bmc.SensorVoltage
	case types.SensorTypeCurrent:
		return bmc.SensorCurrent
	case types.SensorTypeFan:
		return bmc.SensorFan
	}
	return bmc.SensorOther
}

// decodeSensorReading maps a Get Sensor Reading reply to a reading of s:
// the value where the BMC gives one (an analog full record, scanning
// enabled, the reading available) and, for threshold sensors, the health
// of the threshold comparison bits (IPMI v2.0 table 35-15, byte 3):
// non-recoverable or critical → Critical, non-critical → Warning, none →
// OK. Anything else is HealthUnknown. This is ipmitool's status column
// (nr, cr, nc, ok, na).
func decodeSensorReading(s sdrSensor, data []byte) (bmc.SensorReading, error) {
	r := unreadSensor(s)
	var res sensor.GetSensorReadingResponse
	if err := res.Unpack(data); err != nil {
		return r, fmt.Errorf("decode Get Sensor Reading reply for sensor %s (% x): %w", sensorLabel(s), data, err)
	}
	if res.SensorScanningDisabled || res.ReadingUnavailable {
		return r, nil
	}
	if s.full != nil && s.full.HasAnalogReading() {
		v := s.full.ConvertReading(res.Reading)
		r.Reading = &v
	}
	if s.threshold && len(data) >= 3 {
		switch {
		case res.Above_UNR || res.Below_LNR || res.Above_UCR || res.Below_LCR:
			r.Health = bmc.HealthCritical
		case res.Above_UNC || res.Below_LNC:
			r.Health = bmc.HealthWarning
		default:
			r.Health = bmc.HealthOK
		}
	}
	return r, nil
}

// unreadSensor is s without a reading: HealthUnknown, no value.
func unreadSensor(s sdrSensor) bmc.SensorReading {
	return bmc.SensorReading{Name: s.name, Kind: s.kind, Unit: s.unit}
}

// sensorLabel names a sensor in errors: "CPU Temp" (#0x01).
func sensorLabel(s sdrSensor) string {
	return fmt.Sprintf("%s (#%#02x)", bmc.QuoteBounded(s.name), s.number)
}
