package ipmi

import "time"

// SetNow replaces the driver's clock (for the idle re-login test).
func SetNow(d *Driver, now func() time.Time) { d.now = now }
