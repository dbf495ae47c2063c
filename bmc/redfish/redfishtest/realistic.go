package redfishtest

import "time"

// Realistic returns a Config for a BMC that behaves in time the way server
// BMCs do, where the zero Config answers at once and keeps sessions
// forever:
//
//   - sessions expire after 30 minutes without a request (SessionTTL; the
//     SessionService reports SessionTimeout 1800, the iLO and iDRAC
//     default);
//   - power changes take 4 s, reported as PoweringOn/PoweringOff meanwhile
//     (PowerDelay);
//   - a one-time boot override is consumed by the next boot and reads as
//     Disabled afterwards (BootOnceHonoured);
//   - after a Manager.Reset the BMC does not answer for 90 s and has
//     forgotten its sessions (BMCResetDowntime).
//
// Code that passes against it has met the timing it meets on hardware. Set
// Clock to a fake clock to run through those minutes without waiting; any
// other field (credentials, systems, personalities) may be set on the
// result as on any Config.
func Realistic() Config {
	return Config{
		SessionTTL:       30 * time.Minute,
		PowerDelay:       4 * time.Second,
		BootOnce:         BootOnceHonoured,
		BMCResetDowntime: 90 * time.Second,
	}
}
