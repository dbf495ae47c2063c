package ipmi

import "time"

// SetNow replaces the driver's clock (for the idle re-login test).
func SetNow(d *Driver, now func() time.Time) { d.now = now }

// Dropped is how many datagrams the driver's transport dropped as stale or
// unexpected.
func Dropped(d *Driver) int64 { return d.dropped.Load() }
