package ipmitest

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/bougou/go-ipmi/pkg/handlers"
	"github.com/bougou/go-ipmi/pkg/types"
)

// DefaultSELCapacity is how many records the simulated SEL holds when
// Options.SELCapacity is 0.
const DefaultSELCapacity = 512

// SELRecord is one record of the simulated System Event Log (IPMI v2.0
// section 32), as Get SEL Entry returns it.
type SELRecord struct {
	// ID is the record ID the BMC gave it: 1, 2, 3... in the order added,
	// never reused (a clear does not restart them).
	ID uint16
	// Type is the record type: 02h a system event, C0h-DFh a timestamped
	// OEM record, E0h-FFh an OEM record without timestamp.
	Type uint8
	// Data are the record's bytes after the type (bytes 3-15). For types
	// 00h-DFh the first four are the timestamp the BMC set when the record
	// was added (Options.Clock, seconds since the epoch, LS byte first).
	Data [13]byte
}

// Bytes returns the 16-byte record.
func (r SELRecord) Bytes() []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint16(b, r.ID)
	b[2] = r.Type
	copy(b[3:], r.Data[:])
	return b
}

// SELEvent is a system event record (type 02h) for [SEL.AddEvent]: what
// a sensor reports to the BMC (IPMI v2.0 section 29.7).
type SELEvent struct {
	// Generator is the generator ID: 0020h (the BMC) when 0.
	Generator uint16
	// SensorType (e.g. 01h temperature, 04h fan, 08h power supply) and
	// SensorNumber name the sensor.
	SensorType, SensorNumber uint8
	// EventType is the event/reading type code (01h threshold, 6Fh
	// sensor-specific); Deassertion marks a deassertion event.
	EventType   uint8
	Deassertion bool
	// EventData are event data 1-3 (data 1 bits 3:0: the offset).
	EventData [3]byte
}

// SEL is the simulated BMC's System Event Log: Get SEL Info, Reserve SEL,
// Get SEL Entry (whole or partial records), Add SEL Entry and Clear SEL
// (with a reservation; the erase reports "in progress" to the first
// Options.SELErasePolls status queries). A test adds records and reads
// what the BMC holds. Safe for concurrent use.
type SEL struct {
	mu          sync.Mutex
	clock       Clock
	capacity    int
	erasePolls  int
	records     []SELRecord
	lastID      uint16
	reservation uint16 // 0: none
	erasing     int    // status queries still answered "in progress"
	added       uint32 // most recent addition, a SEL timestamp
	erased      uint32 // most recent erase
	overflow    bool
}

func newSEL(clock Clock, capacity, erasePolls int) *SEL {
	if capacity <= 0 {
		capacity = DefaultSELCapacity
	}
	return &SEL{clock: clock, capacity: capacity, erasePolls: erasePolls, added: 0xffffffff, erased: 0xffffffff}
}

// AddEvent records a system event (record type 02h), stamped with the
// time now, and returns its record ID. A full SEL drops it and returns 0.
func (s *SEL) AddEvent(e SELEvent) uint16 {
	var d [13]byte
	gen := e.Generator
	if gen == 0 {
		gen = 0x0020
	}
	binary.LittleEndian.PutUint16(d[4:], gen)
	d[6] = 0x04 // event message revision: IPMI v2.0
	d[7], d[8] = e.SensorType, e.SensorNumber
	d[9] = e.EventType & 0x7f
	if e.Deassertion {
		d[9] |= 0x80
	}
	copy(d[10:], e.EventData[:])
	return s.Add(0x02, d)
}

// Add records a record of any type with these bytes (after the type) and
// returns its record ID; the BMC stamps types 00h-DFh with the time now.
// A full SEL drops it and returns 0.
func (s *SEL) Add(recordType uint8, data [13]byte) uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _ := s.addLocked(recordType, data)
	return id
}

func (s *SEL) addLocked(typ uint8, data [13]byte) (uint16, bool) {
	if len(s.records) >= s.capacity || s.lastID == 0xfffe {
		s.overflow = true
		return 0, false
	}
	now := s.now()
	if typ < 0xe0 {
		binary.LittleEndian.PutUint32(data[:], now)
	}
	s.lastID++
	s.records = append(s.records, SELRecord{ID: s.lastID, Type: typ, Data: data})
	s.added = now
	return s.lastID, true
}

func (s *SEL) now() uint32 { return uint32(s.clock.Now().Unix()) }

// Records returns the records the SEL holds, in the order Get SEL Entry
// lists them (the oldest first).
func (s *SEL) Records() []SELRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records)
}

// Clear empties the SEL, as a Clear SEL command would (the reservation is
// cancelled).
func (s *SEL) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
}

func (s *SEL) clearLocked() {
	s.records, s.reservation, s.overflow = nil, 0, false
	s.erased = s.now()
}

func (s *SEL) register(reg *handlers.Registry) {
	reg.RegisterFunc(types.CommandGetSELInfo, s.handleInfo)
	reg.RegisterFunc(types.CommandReserveSEL, s.handleReserve)
	reg.RegisterFunc(types.CommandGetSELEntry, s.handleGetEntry)
	reg.RegisterFunc(types.CommandAddSELEntry, s.handleAddEntry)
	reg.RegisterFunc(types.CommandClearSEL, s.handleClear)
	reg.RegisterFunc(types.CommandGetSELTime, s.handleGetTime)
}

// handleInfo: Get SEL Info (31.2).
func (s *SEL) handleInfo(context.Context, *handlers.HandlerContext, []byte) ([]byte, types.CompletionCode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := make([]byte, 14)
	r[0] = 0x51 // SEL version 1.5 (IPMI v1.5 and v2.0)
	binary.LittleEndian.PutUint16(r[1:], uint16(len(s.records)))
	binary.LittleEndian.PutUint16(r[3:], uint16(min((s.capacity-len(s.records))*16, 0xfffe)))
	binary.LittleEndian.PutUint32(r[5:], s.added)
	binary.LittleEndian.PutUint32(r[9:], s.erased)
	r[13] = 0x02 // Reserve SEL supported; no delete, partial add or allocation info
	if s.overflow {
		r[13] |= 0x80
	}
	return r, types.CodeOK, nil
}

// handleReserve: Reserve SEL (31.4). IDs are never 0.
func (s *SEL) handleReserve(context.Context, *handlers.HandlerContext, []byte) ([]byte, types.CompletionCode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reservation++
	if s.reservation == 0 {
		s.reservation = 1
	}
	return binary.LittleEndian.AppendUint16(nil, s.reservation), types.CodeOK, nil
}

// handleGetEntry: Get SEL Entry (31.5). A partial read (offset, or fewer
// than the whole record) needs the current reservation.
func (s *SEL) handleGetEntry(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) < 6 {
		return nil, types.CodeRequestDataLengthInvalid, nil
	}
	res, id, off, n := binary.LittleEndian.Uint16(req), binary.LittleEndian.Uint16(req[2:]), int(req[4]), int(req[5])
	s.mu.Lock()
	defer s.mu.Unlock()
	partial := off != 0 || n != 0xff && n < 16
	if partial && (res == 0 || res != s.reservation) {
		return nil, types.CodeReservationCanceled, nil
	}
	if off >= 16 {
		return nil, types.CodeParameterOutOfRange, nil
	}
	i := -1
	switch id {
	case 0x0000:
		if len(s.records) > 0 {
			i = 0
		}
	case 0xffff:
		i = len(s.records) - 1
	default:
		i = slices.IndexFunc(s.records, func(r SELRecord) bool { return r.ID == id })
	}
	if i < 0 {
		return nil, types.CodeRequestedDataNotPresent, nil
	}
	next := uint16(0xffff)
	if i+1 < len(s.records) {
		next = s.records[i+1].ID
	}
	b := s.records[i].Bytes()[off:]
	if n != 0xff {
		b = b[:min(n, len(b))]
	}
	return append(binary.LittleEndian.AppendUint16(nil, next), b...), types.CodeOK, nil
}

// handleAddEntry: Add SEL Entry (31.6), as ipmitool's "sel add" sends it.
func (s *SEL) handleAddEntry(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) != 16 {
		return nil, types.CodeRequestDataLengthInvalid, nil
	}
	var d [13]byte
	copy(d[:], req[3:])
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.addLocked(req[2], d)
	if !ok {
		return nil, types.CodeOutOfSpace, nil
	}
	return binary.LittleEndian.AppendUint16(nil, id), types.CodeOK, nil
}

// handleClear: Clear SEL (31.9): the reservation, "CLR", then AAh to
// initiate the erase or 00h for its status. The records go at once (the
// other commands go on as usual); the status reads "in progress" (0) for
// Options.SELErasePolls queries, then "completed" (1).
func (s *SEL) handleClear(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) != 6 {
		return nil, types.CodeRequestDataLengthInvalid, nil
	}
	if req[2] != 'C' || req[3] != 'L' || req[4] != 'R' || req[5] != 0xaa && req[5] != 0x00 {
		return nil, types.CodeRequestDataFieldInvalid, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if res := binary.LittleEndian.Uint16(req); res == 0 || res != s.reservation {
		return nil, types.CodeReservationCanceled, nil
	}
	if req[5] == 0xaa {
		res := s.reservation
		s.clearLocked()
		s.reservation = res // the one that asked may follow its erase
		s.erasing = s.erasePolls
		if s.erasing > 0 {
			return []byte{0x00}, types.CodeOK, nil
		}
		return []byte{0x01}, types.CodeOK, nil
	}
	if s.erasing > 0 {
		s.erasing--
		return []byte{0x00}, types.CodeOK, nil
	}
	return []byte{0x01}, types.CodeOK, nil
}

// handleGetTime: Get SEL Time (31.10), which ipmitool reads.
func (s *SEL) handleGetTime(context.Context, *handlers.HandlerContext, []byte) ([]byte, types.CompletionCode, error) {
	return binary.LittleEndian.AppendUint32(nil, uint32(s.clock.Now().Unix())), types.CodeOK, nil
}
