package ipmitest

import "time"

// Realistic returns Options for a BMC that behaves in time the way server
// BMCs do, where the zero Options answer at once and keep state forever:
//
//   - power changes land 4 s after the BMC accepted them (the old state
//     reads back until then; IPMI has no transitional state);
//   - a one-time boot flag is cleared by the next boot, and after 60 s
//     without a Chassis Control command (IPMI v2.0 section 28.12);
//   - a session idle for 60 s is forgotten (IPMI v2.0 section 6.12.15);
//   - after a BMC Cold or Warm Reset the BMC is silent for 90 s (a Cold
//     Reset also ends every session).
//
// Code that passes against it has met the timing it meets on hardware. Set
// Clock to a fake clock to run through those minutes without waiting; the
// other fields (credentials, cipher suites, personalities) may be set on
// the result as on any Options.
func Realistic() Options {
	return Options{
		PowerDelay:       4 * time.Second,
		BootFlagTimeout:  60 * time.Second,
		SessionTimeout:   60 * time.Second,
		BMCResetDowntime: 90 * time.Second,
	}
}
