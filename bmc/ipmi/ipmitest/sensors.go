package ipmitest

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/bougou/go-ipmi/pkg/command/storage"
	"github.com/bougou/go-ipmi/pkg/handlers"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// Sensor is one simulated sensor: a sensor data record (SDR) the BMC lists
// in its SDR repository and the reading it answers Get Sensor Reading with.
// The same Sensor runs on [Server] ([Server.Sensors]) and on ipmi_sim
// ([OpenIPMIOptions.Sensors]).
type Sensor struct {
	// Number is the sensor number (owner: the BMC, 20h, LUN 0). Unique.
	Number uint8
	// Name is the SDR's ID string, at most 16 bytes (ASCII).
	Name string
	// Type is the IPMI sensor type: 01h temperature, 02h voltage, 03h
	// current, 04h fan, 08h power supply...
	Type uint8
	// Unit is the IPMI base unit code of an analog sensor: 1 degrees C,
	// 4 Volts, 5 Amps, 6 Watts, 18 RPM. Ignored for Discrete.
	Unit uint8
	// M, B, BExp and RExp convert the raw reading (unsigned) to the value:
	// (M*raw + B*10^BExp) * 10^RExp (IPMI v2.0 section 36.3, linear). M 0
	// means 1. M and B are 10-bit signed, the exponents 4-bit signed.
	M, B       int16
	BExp, RExp int8
	// Raw is the raw reading; for a Discrete sensor, its state bits 0-7.
	Raw uint8
	// Thresholds, raw (nil: the sensor has none): lower non-recoverable,
	// critical, non-critical; upper non-critical, critical,
	// non-recoverable. The BMC compares Raw with them ("at or below", "at
	// or above") and reports the bits set in Get Sensor Reading.
	LNR, LCR, LNC, UNC, UCR, UNR *uint8
	// Unavailable makes Get Sensor Reading say "reading unavailable"
	// ([Server] only: ipmi_sim's emulation commands cannot set it).
	Unavailable bool
	// Discrete makes it a sensor-specific discrete sensor (event/reading
	// type 6Fh, no numeric reading): a presence or state sensor.
	Discrete bool
	// Compact lists it as a compact SDR (type 02h), which has no
	// conversion factors: a threshold sensor without a numeric reading.
	Compact bool
	// NotPresent makes Get Sensor Reading answer "requested data not
	// present" (CBh): a sensor the SDR lists and the BMC cannot read. On
	// ipmi_sim the sensor's SDR is added without the sensor.
	NotPresent bool
	// Owner is the slave address of the controller that owns the sensor
	// (the SDR's owner ID), e.g. 2Ch for an Intel ME; reading it takes a
	// bridged request. Defaults to 0: 20h, the BMC. [Server] only.
	Owner uint8
}

// Raw returns a pointer to v, for Sensor's thresholds.
func Raw(v uint8) *uint8 { return &v }

// Value is raw converted with the sensor's factors.
func (s Sensor) Value(raw uint8) float64 {
	m := s.M
	if m == 0 {
		m = 1
	}
	return (float64(m)*float64(raw) + float64(s.B)*math.Pow(10, float64(s.BExp))) * math.Pow(10, float64(s.RExp))
}

func (s Sensor) owner() uint8 {
	if s.Owner == 0 {
		return 0x20
	}
	return s.Owner
}

// thresholdBits is byte 3 of Get Sensor Reading for a threshold sensor
// (IPMI v2.0 table 35-15): bit 0 at or below LNC, 1 LCR, 2 LNR, 3 at or
// above UNC, 4 UCR, 5 UNR.
func (s Sensor) thresholdBits() uint8 {
	var b uint8
	for i, t := range []*uint8{s.LNC, s.LCR, s.LNR} {
		if t != nil && s.Raw <= *t {
			b |= 1 << i
		}
	}
	for i, t := range []*uint8{s.UNC, s.UCR, s.UNR} {
		if t != nil && s.Raw >= *t {
			b |= 1 << (3 + i)
		}
	}
	return b
}

// Reading is what a driver should read of the sensor: the value where the
// BMC gives one (an available full analog record), and the health of the
// threshold bits (non-recoverable or critical: Critical; non-critical:
// Warning; none: OK; unknown for discrete and unavailable sensors).
func (s Sensor) Reading() bmc.SensorReading {
	r := bmc.SensorReading{Name: s.Name, Kind: bmc.SensorOther}
	if !s.Discrete {
		switch s.Unit {
		case 1:
			r.Kind, r.Unit = bmc.SensorTemperature, bmc.UnitCelsius
		case 4:
			r.Kind, r.Unit = bmc.SensorVoltage, bmc.UnitVolts
		case 5:
			r.Kind, r.Unit = bmc.SensorCurrent, bmc.UnitAmps
		case 6:
			r.Kind, r.Unit = bmc.SensorPower, bmc.UnitWatts
		case 18:
			r.Kind, r.Unit = bmc.SensorFan, bmc.UnitRPM
		default:
			r.Unit = types.SensorUnit{BaseUnit: types.SensorUnitType(s.Unit)}.String()
		}
	}
	if s.Discrete || s.Unavailable || s.NotPresent || s.owner() != 0x20 {
		return r
	}
	if !s.Compact {
		v := s.Value(s.Raw)
		r.Reading = &v
	}
	switch b := s.thresholdBits(); {
	case b&0b110110 != 0:
		r.Health = bmc.HealthCritical
	case b != 0:
		r.Health = bmc.HealthWarning
	default:
		r.Health = bmc.HealthOK
	}
	return r
}

// SDR encodes the sensor's record (IPMI v2.0 section 43.1 full, 43.2
// compact) with go-ipmi's encoders, record ID id. The thresholds set are
// readable and their status returned (the masks), scanning and events
// are enabled. go-ipmi v0.9.0 swaps the readable and settable threshold
// masks (bytes 19 and 20 of a full record), so ipmitool lists these
// thresholds as settable; drivers that read the thresholds with Get
// Sensor Thresholds (ipmitool) get them all the same.
func (s Sensor) SDR(id uint16) []byte {
	init := types.SensorInitialization{InitScanning: true, InitEvents: true, EventGenerationEnabled: true, SensorScanningEnabled: true}
	caps := types.SensorCapabilities{AutoRearm: true}
	ert := types.EventReadingTypeThreshold
	unit := types.SensorUnit{BaseUnit: types.SensorUnitType(s.Unit)}
	var mask types.Mask
	if s.Discrete {
		ert = types.EventReadingTypeSensorSpecific
		unit = types.SensorUnit{AnalogDataFormat: types.SensorAnalogUnitFormat_NotAnalog}
	} else {
		caps.ThresholdAccess = 1 // readable (IPMI v2.0 table 43-1, byte 11 bits 3:2)
		th := &mask.Threshold
		for _, t := range []struct {
			v *uint8
			m *types.Mask_Threshold
		}{{s.LNR, &th.LNR}, {s.LCR, &th.LCR}, {s.LNC, &th.LNC}, {s.UNC, &th.UNC}, {s.UCR, &th.UCR}, {s.UNR, &th.UNR}} {
			if t.v != nil {
				t.m.Readable, t.m.StatusReturned = true, true
			}
		}
	}
	gen := types.GeneratorID(s.owner())
	if s.Compact {
		c := &types.SDRCompact{
			GeneratorID: gen, SensorNumber: types.SensorNumber(s.Number), SensorEntityID: 0x07,
			SensorInitialization: init, SensorCapabilities: caps, SensorType: types.SensorType(s.Type),
			SensorEventReadingType: ert, Mask: mask, SensorUnit: unit, IDStringBytes: []byte(s.Name),
		}
		return c.Pack(id)
	}
	m := s.M
	if m == 0 {
		m = 1
	}
	f := &types.SDRFull{
		GeneratorID: gen, SensorNumber: types.SensorNumber(s.Number), SensorEntityID: 0x07,
		SensorInitialization: init, SensorCapabilities: caps, SensorType: types.SensorType(s.Type),
		SensorEventReadingType: ert, Mask: mask, SensorUnit: unit,
		ReadingFactors:      types.ReadingFactors{M: m, B: s.B, B_Exp: s.BExp, R_Exp: s.RExp},
		SensorMaxReadingRaw: 0xff, IDStringBytes: []byte(s.Name),
	}
	for _, t := range []struct {
		v *uint8
		f *uint8
	}{{s.LNR, &f.LNR_Raw}, {s.LCR, &f.LCR_Raw}, {s.LNC, &f.LNC_Raw}, {s.UNC, &f.UNC_Raw}, {s.UCR, &f.UCR_Raw}, {s.UNR, &f.UNR_Raw}} {
		if t.v != nil {
			*t.f = *t.v
		}
	}
	return f.Pack(id)
}

func (s Sensor) validate() error {
	if len(s.Name) > 16 || strings.ContainsAny(s.Name, "\"\\\n") {
		return fmt.Errorf("sensor %#02x: name %q: at most 16 bytes, no quotes, backslashes or newlines", s.Number, s.Name)
	}
	if s.M < -512 || s.M > 511 || s.B < -512 || s.B > 511 || s.BExp < -8 || s.BExp > 7 || s.RExp < -8 || s.RExp > 7 {
		return fmt.Errorf("sensor %#02x (%s): M %d, B %d (10-bit signed), BExp %d, RExp %d (4-bit signed) out of range", s.Number, s.Name, s.M, s.B, s.BExp, s.RExp)
	}
	return nil
}

func validateSensors(list []Sensor) error {
	seen := map[uint8]bool{}
	for _, s := range list {
		if err := s.validate(); err != nil {
			return err
		}
		if seen[s.Number] {
			return fmt.Errorf("sensor number %#02x is used twice", s.Number)
		}
		seen[s.Number] = true
	}
	return nil
}

// Sensors are the simulated BMC's sensors and its SDR repository: Get SDR
// Repository Info (the most recent addition and erase times move when
// the sensor list changes, by Options.Clock), Reserve SDR Repository, Get
// SDR (whole records, or at most Options.SDRReadLimit bytes at a time;
// a read at an offset needs the current reservation, which a change of
// the list cancels), and Get Sensor Reading. A test changes readings and
// the list, and counts what was asked. Safe for concurrent use.
type Sensors struct {
	mu          sync.Mutex
	clock       Clock
	readLimit   int
	list        []Sensor
	added       uint32 // SDR timestamps: seconds since the epoch
	erased      uint32
	reservation uint16
	sdrReads    int // Get SDR requests answered
}

func newSensors(clock Clock, list []Sensor, readLimit int) (*Sensors, error) {
	if err := validateSensors(list); err != nil {
		return nil, err
	}
	s := &Sensors{clock: clock, readLimit: readLimit, list: slices.Clone(list), added: 0xffffffff, erased: 0xffffffff}
	if len(list) > 0 {
		s.added = uint32(clock.Now().Unix())
	}
	return s, nil
}

// List returns the sensors.
func (s *Sensors) List() []Sensor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// Readings returns what a driver should read of every sensor
// ([Sensor.Reading]), in the repository's order; nil without sensors.
func (s *Sensors) Readings() []bmc.SensorReading {
	var out []bmc.SensorReading
	for _, x := range s.List() {
		out = append(out, x.Reading())
	}
	return out
}

// Set replaces the sensors (the SDR repository changes: a new addition
// time, the reservation is cancelled). It panics on an invalid list (a
// test's mistake).
func (s *Sensors) Set(list []Sensor) {
	if err := validateSensors(list); err != nil {
		panic("ipmitest: Sensors.Set: " + err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = slices.Clone(list)
	now := uint32(s.clock.Now().Unix())
	s.added, s.erased = now, now
	s.reservation++ // a change cancels the reservation (IPMI v2.0 section 33.11)
}

// SetRaw changes sensor number's raw reading (the SDR stays). It reports
// whether the sensor exists.
func (s *Sensors) SetRaw(number, raw uint8) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.list {
		if s.list[i].Number == number {
			s.list[i].Raw = raw
			return true
		}
	}
	return false
}

// SDRReads is how many Get SDR requests the BMC answered.
func (s *Sensors) SDRReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sdrReads
}

func (s *Sensors) register(reg *handlers.Registry) {
	reg.RegisterFunc(types.CommandGetSDRRepoInfo, s.handleRepoInfo)
	reg.RegisterFunc(types.CommandReserveSDRRepo, s.handleReserve)
	reg.RegisterFunc(types.CommandGetSDR, s.handleGetSDR)
	reg.RegisterFunc(types.CommandGetSensorReading, s.handleReading)
}

func (s *Sensors) handleRepoInfo(context.Context, *handlers.HandlerContext, []byte) ([]byte, types.CompletionCode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]byte, 14)
	out[0] = 0x51 // SDR version: IPMI v2.0
	binary.LittleEndian.PutUint16(out[1:], uint16(len(s.list)))
	binary.LittleEndian.PutUint16(out[3:], 0xfffe-uint16(64*len(s.list)))
	binary.LittleEndian.PutUint32(out[5:], s.added)
	binary.LittleEndian.PutUint32(out[9:], s.erased)
	out[13] = 0x22 // non-modal updates; Reserve SDR Repository supported
	return out, types.CodeOK, nil
}

func (s *Sensors) handleReserve(context.Context, *handlers.HandlerContext, []byte) ([]byte, types.CompletionCode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reservation++
	if s.reservation == 0 {
		s.reservation = 1
	}
	out := make([]byte, 2)
	binary.LittleEndian.PutUint16(out, s.reservation)
	return out, types.CodeOK, nil
}

// Record IDs are the positions in the list, from 1.
func (s *Sensors) handleGetSDR(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	var r storage.GetSDRRequest
	if err := r.Unpack(req); err != nil {
		return nil, types.CodeRequestDataLengthInvalid, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sdrReads++
	if r.ReadOffset > 0 && r.ReservationID != s.reservation {
		return nil, types.CodeReservationCanceled, nil
	}
	idx := int(r.RecordID) - 1
	switch r.RecordID {
	case 0x0000:
		idx = 0
	case 0xffff:
		idx = len(s.list) - 1
	}
	if idx < 0 || idx >= len(s.list) {
		return nil, types.CodeRequestedDataNotPresent, nil
	}
	rec := s.list[idx].SDR(uint16(idx + 1))
	if int(r.ReadOffset) >= len(rec) {
		return nil, types.CodeParameterOutOfRange, nil
	}
	n := len(rec) - int(r.ReadOffset)
	if r.ReadBytes != 0xff {
		n = min(n, int(r.ReadBytes))
	}
	if s.readLimit > 0 && n > s.readLimit {
		return nil, types.CodeCannotReturnRequestedDataBytes, nil
	}
	next := uint16(idx + 2)
	if idx+1 >= len(s.list) {
		next = 0xffff
	}
	out := binary.LittleEndian.AppendUint16(nil, next)
	return append(out, rec[r.ReadOffset:int(r.ReadOffset)+n]...), types.CodeOK, nil
}

func (s *Sensors) handleReading(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) < 1 {
		return nil, types.CodeRequestDataLengthInvalid, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.list {
		if x.Number != req[0] {
			continue
		}
		if x.NotPresent {
			return nil, types.CodeRequestedDataNotPresent, nil
		}
		flags := byte(0xc0) // event messages and scanning enabled
		if x.Unavailable {
			flags |= 0x20
		}
		state := x.Raw
		if !x.Discrete {
			state = 0xc0 | x.thresholdBits() // bits 7:6 reserved, read as 1
		}
		raw := x.Raw
		if x.Discrete {
			raw = 0
		}
		if x.Discrete {
			return []byte{raw, flags, state, 0x80}, types.CodeOK, nil // byte 4: states 8-14, bit 7 reserved (1b)
		}
		return []byte{raw, flags, state}, types.CodeOK, nil
	}
	return nil, types.CodeRequestedDataNotPresent, nil
}

// sensorCommands are ipmi_sim's emulation commands (ipmi_sim_cmd(5)) for
// the sensors: each one's SDR in the main repository, the sensor, its
// thresholds and its reading.
func sensorCommands(list []Sensor) string {
	var b strings.Builder
	for i, s := range list {
		b.WriteString("main_sdr_add 0x20")
		for _, c := range s.SDR(uint16(i + 1)) {
			fmt.Fprintf(&b, " 0x%02x", c)
		}
		ert := 0x01
		if s.Discrete {
			ert = 0x6f
		}
		b.WriteString("\n")
		if s.NotPresent {
			continue // listed, not there
		}
		fmt.Fprintf(&b, "sensor_add 0x20 0 %d %d %d\n", s.Number, s.Type, ert)
		if s.Discrete {
			for bit := 0; bit < 8; bit++ {
				fmt.Fprintf(&b, "sensor_set_bit 0x20 0 %d %d %d 0\n", s.Number, bit, s.Raw>>bit&1)
			}
			continue
		}
		// Thresholds 5 (UNR) down to 0 (LNC), enabled where set.
		enabled, values := "", ""
		for _, t := range []*uint8{s.UNR, s.UCR, s.UNC, s.LNR, s.LCR, s.LNC} {
			v := uint8(0)
			if t != nil {
				enabled, v = enabled+"1", *t
			} else {
				enabled += "0"
			}
			values += fmt.Sprintf(" %d", v)
		}
		fmt.Fprintf(&b, "sensor_set_threshold 0x20 0 %d readable %s%s\n", s.Number, enabled, values)
		fmt.Fprintf(&b, "sensor_set_value 0x20 0 %d %d 0\n", s.Number, s.Raw)
	}
	return b.String()
}
