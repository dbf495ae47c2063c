package ipmi

import (
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// SetNow replaces the driver's clock (for the idle re-login test).
func SetNow(d *Driver, now func() time.Time) { d.now = now }

// Dropped is how many datagrams the driver's transport dropped as stale or
// unexpected.
func Dropped(d *Driver) int64 { return d.dropped.Load() }

// DecodeSELRecord is the driver's decoder of a 16-byte SEL record, for the
// simulator's peer in the conformance tests.
func DecodeSELRecord(rec []byte) bmc.LogEntry { return decodeSELRecord(rec) }

// SDRWalks is how many times the driver read the SDR repository's records.
func SDRWalks(d *Driver) int64 { return d.sdrWalks.Load() }
