package ipmi

import (
	"math"
	"testing"

	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// A full threshold sensor record (CPU1 Temp, degrees C, M=1) and a compact
// one, as go-ipmi packs them; seeds for the fuzz targets below.
func seedFullSDR() []byte {
	f := &types.SDRFull{GeneratorID: 0x20, SensorNumber: 1, SensorType: types.SensorTypeTemperature,
		SensorEventReadingType: types.EventReadingTypeThreshold, SensorUnit: types.SensorUnit{BaseUnit: types.SensorUnitType_DegreesC},
		ReadingFactors: types.ReadingFactors{M: 1}, IDStringBytes: []byte("CPU1 Temp")}
	return f.Pack(1)
}

func seedCompactSDR() []byte {
	c := &types.SDRCompact{GeneratorID: 0x20, SensorNumber: 2, SensorType: types.SensorTypeFan,
		SensorEventReadingType: types.EventReadingTypeThreshold, IDStringBytes: []byte("FAN1")}
	return c.Pack(2)
}

// FuzzDecodeSDRRecord feeds arbitrary record bytes to the SDR decoder: it
// must not panic; records other than full (01h) and compact (02h) sensor
// records are skipped; a sensor has a valid kind, a name no longer than
// the record, and the record's sensor number.
func FuzzDecodeSDRRecord(f *testing.F) {
	full, compact := seedFullSDR(), seedCompactSDR()
	f.Add(full)
	f.Add(compact)
	f.Add(full[:20])                            // truncated full record
	f.Add([]byte{1, 0, 0x51, 0x12, 3, 0, 0, 0}) // an MC locator: skipped
	f.Add([]byte{1, 0, 0x51, 0x01, 0xff})       // length beyond the data
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, rec []byte) {
		s, ok, err := decodeSDRRecord(rec)
		if err != nil {
			if ok {
				t.Fatalf("decodeSDRRecord(% x): error %v with a sensor", rec, err)
			}
			return
		}
		if !ok {
			if len(rec) >= 4 && (rec[3] == 0x01 || rec[3] == 0x02) {
				t.Fatalf("decodeSDRRecord(% x): a sensor record (type %#02x) skipped without an error", rec, rec[3])
			}
			return
		}
		if rec[3] != 0x01 && rec[3] != 0x02 {
			t.Fatalf("decodeSDRRecord(% x): record type %#02x read as a sensor", rec, rec[3])
		}
		if !s.kind.Valid() || len(s.name) > len(rec) || s.number != rec[7] {
			t.Fatalf("decodeSDRRecord(% x) = %+v", rec, s)
		}
		if (s.full != nil) != (rec[3] == 0x01) {
			t.Fatalf("decodeSDRRecord(% x): conversion factors kept %t for record type %#02x", rec, s.full != nil, rec[3])
		}
	})
}

// FuzzDecodeSensorReading feeds arbitrary Get Sensor Reading replies for
// a full threshold sensor, a compact one and a discrete one: no panic; a
// reply shorter than 2 bytes is an error; scanning disabled or reading
// unavailable read no value and unknown health; otherwise the health
// follows the threshold bits exactly and only a full analog record has a
// value, the raw byte converted.
func FuzzDecodeSensorReading(f *testing.F) {
	full, _, _ := decodeSDRRecord(seedFullSDR())
	compact, _, _ := decodeSDRRecord(seedCompactSDR())
	discrete := full
	discrete.threshold = false
	for _, seed := range [][]byte{
		{45, 0xc0, 0xc0},      // OK
		{85, 0xc0, 0xc8},      // at or above UNC
		{95, 0xc0, 0xd8},      // UNC and UCR
		{1, 0xc0, 0xc7},       // at or below every lower threshold
		{0, 0xe0, 0xc0},       // reading unavailable
		{0, 0x80, 0xc0},       // scanning disabled
		{7, 0xc0},             // no threshold byte
		{0, 0xc0, 0x01, 0x80}, // discrete state byte
		{7},
	} {
		for i := range 3 {
			f.Add(uint8(i), seed)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		s := []sdrSensor{full, compact, discrete}[which%3]
		r, err := decodeSensorReading(s, data)
		if r.Name != s.name || r.Kind != s.kind || r.Unit != s.unit {
			t.Fatalf("decodeSensorReading(% x) = %+v: lost the record's name, kind or unit", data, r)
		}
		if err != nil || len(data) < 2 {
			if err == nil || r.Reading != nil || r.Health != bmc.HealthUnknown {
				t.Fatalf("decodeSensorReading(% x) = %+v, %v; want an error without a value", data, r, err)
			}
			return
		}
		if data[1]&0x40 == 0 || data[1]&0x20 != 0 {
			if r.Reading != nil || r.Health != bmc.HealthUnknown {
				t.Fatalf("decodeSensorReading(% x) = %+v; scanning disabled or unavailable reads nothing", data, r)
			}
			return
		}
		if (r.Reading != nil) != (s.full != nil) {
			t.Fatalf("decodeSensorReading(% x): value %v for a record with factors %t", data, r.Reading, s.full != nil)
		}
		if r.Reading != nil && (*r.Reading != float64(data[0]) || math.IsNaN(*r.Reading)) {
			t.Fatalf("decodeSensorReading(% x): value %v, want %d (M=1)", data, *r.Reading, data[0])
		}
		want := bmc.HealthUnknown
		if s.threshold && len(data) >= 3 {
			switch b := data[2]; {
			case b&0x36 != 0:
				want = bmc.HealthCritical
			case b&0x09 != 0:
				want = bmc.HealthWarning
			default:
				want = bmc.HealthOK
			}
		}
		if r.Health != want {
			t.Fatalf("decodeSensorReading(% x) for %s: health %q, want %q", data, s.name, r.Health, want)
		}
	})
}

// FuzzDecodeSDRRepoInfo: no panic; a reply shorter than 14 bytes is an
// error; the record count is bytes 1-2.
func FuzzDecodeSDRRepoInfo(f *testing.F) {
	f.Add([]byte{0x51, 8, 0, 0xfe, 0xff, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff, 0x22})
	f.Add([]byte{0x51, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := decodeSDRRepoInfo(data)
		if len(data) < 14 {
			if err == nil {
				t.Fatalf("decodeSDRRepoInfo(% x): no error for %d bytes", data, len(data))
			}
			return
		}
		if err != nil || k.records != uint16(data[1])|uint16(data[2])<<8 {
			t.Fatalf("decodeSDRRepoInfo(% x) = %+v, %v", data, k, err)
		}
	})
}
