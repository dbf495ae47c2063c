package ipmi

// Sensor readings for Health (docs/health-events.md, "Sensor readings"):
// the SDR repository, cached per driver while Get SDR Repository Info
// reports it unchanged, and one Get Sensor Reading per sensor record.
//
// The walk is written here rather than with go-ipmi's Client.GetSensors /
// GetSDRs because those send their requests themselves: past the driver's
// request path (the endpoint's budget, the fence, the request count), with
// no cache (every call re-reads the whole repository), and with three more
// requests per sensor (thresholds, hysteresis, event status) that Health
// does not use.

import (
	"context"
	"errors"
	"fmt"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/sensor"
	"github.com/bougou/go-ipmi/pkg/command/storage"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// Get SDR: the first record, and "no more" as a next record ID
// (section 33.12); the read size that means "the whole record".
const (
	sdrFirst     uint16 = 0x0000
	sdrLast      uint16 = 0xffff
	sdrWhole     uint8  = 0xff
	sdrPieceSize        = 16 // what ipmitool and go-ipmi read at a time from BMCs that refuse whole records
)

// sdrCache is the sensor records of the repository as of key. Guarded by
// the driver's sem, like the session it was read on.
type sdrCache struct {
	valid   bool
	key     sdrRepoKey
	sensors []sdrSensor
}

// readSensors reads every sensor (at most bmc.MaxSensors): Get SDR
// Repository Info, the records when they changed, then Get Sensor Reading
// for each. A BMC without an SDR repository has no sensors (nil, nil).
// Callers hold d.sem.
func (d *Driver) readSensors(ctx context.Context, c *client.Client) ([]bmc.SensorReading, error) {
	var raw rawResponse
	if err := d.exchange(ctx, c, &storage.GetSDRRepoInfoRequest{}, &raw); err != nil {
		if noRepository(err) {
			d.sdr = sdrCache{}
			return nil, nil
		}
		return nil, fmt.Errorf("get SDR repository info: %w", err)
	}
	key, err := decodeSDRRepoInfo(raw.data)
	if err != nil {
		return nil, bmc.Permanent(err)
	}
	if !d.sdr.valid || d.sdr.key != key {
		var sensors []sdrSensor
		if key.records > 0 {
			sensors, err = d.walkSDR(ctx, c)
		}
		if err != nil {
			d.sdr = sdrCache{}
			return nil, err
		}
		d.sdr = sdrCache{valid: true, key: key, sensors: sensors}
		d.sdrWalks.Add(1)
	}
	sensors := d.sdr.sensors
	if len(sensors) > bmc.MaxSensors {
		sensors = sensors[:bmc.MaxSensors] // the rest would be cut by Bound: do not ask for them
	}
	var out []bmc.SensorReading
	for _, s := range sensors {
		r, err := d.sensorReading(ctx, c, s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// noRepository reports whether err is the BMC refusing the SDR repository
// commands: it has none.
func noRepository(err error) bool {
	cc := completionCode(err)
	return errors.Is(err, bmc.ErrNotSupported) || cc == types.CodeNotSupported || cc == types.CodeIllegalCommand
}

// bmcAddress is the BMC's own slave address: the sensors it owns answer
// on the LAN session.
const bmcAddress = 0x20

// sensorReading sends Get Sensor Reading for a sensor the BMC owns, on the
// sensor's LUN. A sensor owned by another controller (an Intel ME at 2Ch,
// a satellite controller) would need a bridged request (Send Message),
// which go-ipmi's lanplus does not make: it reads unknown, without a
// request, rather than time out the session. A sensor whose reading the
// BMC refuses (not present, an invalid command, any completion code)
// reads unknown; only a failed exchange fails the read.
func (d *Driver) sensorReading(ctx context.Context, c *client.Client, s sdrSensor) (bmc.SensorReading, error) {
	if s.owner != bmcAddress {
		return unreadSensor(s), nil
	}
	cctx := client.WithCommandContext(ctx, (&client.CommandContext{}).WithResponderAddr(s.owner).WithResponderLUN(s.lun))
	var raw rawResponse
	if err := d.exchange(cctx, c, &sensor.GetSensorReadingRequest{SensorNumber: s.number}, &raw); err != nil {
		if _, refused := types.IsResponseError(err); refused {
			return unreadSensor(s), nil
		}
		return bmc.SensorReading{}, fmt.Errorf("get sensor reading %s: %w", sensorLabel(s), err)
	}
	r, err := decodeSensorReading(s, raw.data)
	if err != nil {
		return bmc.SensorReading{}, bmc.Permanent(err)
	}
	return r, nil
}

// walkSDR reads every record from the first, following each record's
// next record ID to FFFFh, and keeps the sensor records. A record is read
// whole; once the BMC says it cannot return that many bytes (CAh), every
// record is read in 16-byte pieces under a reservation.
func (d *Driver) walkSDR(ctx context.Context, c *client.Client) ([]sdrSensor, error) {
	var (
		sensors     []sdrSensor
		seen        = map[uint16]bool{}
		pieces      bool
		reservation uint16
	)
	reserve := func() error {
		var raw rawResponse
		if err := d.exchange(ctx, c, &storage.ReserveSDRRepoRequest{}, &raw); err != nil {
			if errors.Is(err, bmc.ErrNotSupported) {
				return nil // no reservations: reads take 0000h
			}
			return fmt.Errorf("reserve SDR repository: %w", err)
		}
		var res storage.ReserveSDRRepoResponse
		if err := res.Unpack(raw.data); err != nil {
			return bmc.Permanent(fmt.Errorf("decode Reserve SDR Repository reply (% x): %w", raw.data, err))
		}
		reservation = res.ReservationID
		return nil
	}
	get := func(id uint16, offset, n uint8) (uint16, []byte, error) {
		var raw rawResponse
		err := d.exchange(ctx, c, &storage.GetSDRRequest{ReservationID: reservation, RecordID: id, ReadOffset: offset, ReadBytes: n}, &raw)
		if err != nil {
			return 0, nil, err
		}
		next, data, err := decodeGetSDR(raw.data)
		if err != nil {
			return 0, nil, bmc.Permanent(err)
		}
		return next, data, nil
	}
	for id := sdrFirst; id != sdrLast; {
		if seen[id] {
			return nil, bmc.Permanent(fmt.Errorf("get SDR: the BMC names record %#04x as the next one a second time; its SDR repository is inconsistent", id))
		}
		seen[id] = true
		var (
			next uint16
			rec  []byte
			err  error
		)
		if !pieces {
			next, rec, err = get(id, 0, sdrWhole)
			if completionCode(err) == types.CodeCannotReturnRequestedDataBytes {
				pieces = true
				if err = reserve(); err != nil {
					return nil, err
				}
			}
		}
		if pieces {
			next, rec, err = sdrInPieces(id, get)
		}
		if err != nil && id == sdrFirst && completionCode(err) == types.CodeRequestedDataNotPresent {
			return nil, nil // emptied since Get SDR Repository Info
		}
		if err != nil {
			if cc := completionCode(err); cc == types.CodeReservationCanceled || id != sdrFirst && cc == types.CodeRequestedDataNotPresent {
				return nil, bmc.Transient(fmt.Errorf("get SDR %#04x: the SDR repository changed while it was read: %w", id, err))
			}
			return nil, fmt.Errorf("get SDR %#04x: %w", id, err)
		}
		s, ok, err := decodeSDRRecord(rec)
		if err != nil {
			return nil, bmc.Permanent(err)
		}
		if ok {
			sensors = append(sensors, s)
		}
		id = next
	}
	return sensors, nil
}

// sdrInPieces reads record id 16 bytes at a time: the first piece carries
// the header and so the record's length.
func sdrInPieces(id uint16, get func(id uint16, offset, n uint8) (uint16, []byte, error)) (uint16, []byte, error) {
	next, rec, err := get(id, 0, sdrPieceSize)
	if err != nil {
		return 0, nil, err
	}
	n, err := sdrRecordLength(rec)
	if err != nil {
		return 0, nil, bmc.Permanent(fmt.Errorf("get SDR %#04x: %w", id, err))
	}
	if n > 0xff {
		// Read offsets are one byte: nothing past 255 can be asked for.
		return 0, nil, bmc.Permanent(fmt.Errorf("get SDR %#04x: a %d-byte record cannot be read in pieces (offsets stop at 255)", id, n))
	}
	for len(rec) < n {
		want := min(n-len(rec), sdrPieceSize)
		_, piece, err := get(id, uint8(len(rec)), uint8(want))
		if err != nil {
			return 0, nil, err
		}
		if len(piece) == 0 {
			return 0, nil, bmc.Permanent(fmt.Errorf("get SDR %#04x at offset %d: the BMC returned no bytes", id, len(rec)))
		}
		rec = append(rec, piece...)
	}
	return next, rec[:n], nil
}
