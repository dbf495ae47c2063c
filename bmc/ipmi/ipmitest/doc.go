// Package ipmitest starts IPMI v2.0 BMCs on 127.0.0.1 for tests of code
// that drives BMCs over IPMI.
//
// # In-process simulator
//
// [NewServer] (or [Start] outside tests) runs go-ipmi's reference BMC on a
// free UDP port with a chassis that keeps power and boot state like a
// server: power up/down, soft shutdown turns it off, power cycle leaves it
// on, boot flags are stored and reported back, and the next boot consumes a
// one-time boot flag; Options.PowerDelay makes power changes land late, as
// on real servers. The BMC's own Cold and Warm Reset are counted (the host
// is left alone; a Cold Reset ends every session); Options.BMCResetDowntime
// makes the BMC drop every packet for a while after one. [Server.Chassis]
// exposes that state and counts actions, so a test can check what reached
// the BMC; [Chassis.SetFaults] sets the fault bits Get Chassis Status
// reports. [Server.SEL] is the BMC's System Event Log: a test adds system
// events and OEM records ([SEL.AddEvent], [SEL.Add]) and reads what it
// holds ([SEL.Records]); clients read it with Get SEL Info and Get SEL
// Entry, add to it (ipmitool's "sel add") and clear it with a reservation,
// the erase reporting "in progress" to the first Options.SELErasePolls
// status queries. [Server.Sensors] are the BMC's sensors (Options.Sensors):
// full or compact SDRs in its SDR repository (read whole, or in pieces of
// Options.SDRReadLimit bytes under a reservation) and the readings and
// threshold states Get Sensor Reading answers; a test changes them
// ([Sensors.SetRaw], [Sensors.Set]) and reads what a driver should see
// ([Sensors.Readings]). OpenIPMIOptions.Sensors puts the same sensors in
// ipmi_sim.
//
// Like a real BMC it reports IPMI version 2.0, forgets sessions idle longer
// than Options.SessionTimeout (IPMI's 60 s by default), refuses an unknown
// user with RAKP status 0Dh (unauthorized name) and a wrong password through
// the authentication code (RAKP 4 status 0Fh), and answers Get Session Info
// for the current session.
//
// # Realistic timing
//
// The zero Options answer at once and never clear a one-time boot flag by
// themselves. [Realistic] returns Options with the timing of server BMCs:
// power changes that take seconds, a one-time boot flag cleared after 60 s
// without a Chassis Control command (Options.BootFlagTimeout), 60 s session
// expiry, and a BMC silent for a while after a reset. Options.Clock (any
// value with Now, e.g. a fake clock) drives all of these; a delayed change
// is applied by the first read that finds it due.
//
//	sim := ipmitest.NewServer(t, ipmitest.Options{})
//	drv, err := d.Dial(ctx, sim.Endpoint, sim.Credentials)
//
// # OpenIPMI's ipmi_sim
//
// [StartOpenIPMI] configures and starts ipmi_sim (Debian package openipmi)
// on a free loopback port with a chassis-control script that keeps the power
// state and boot device in files: an IPMI implementation independent of
// go-ipmi, with its own quirks (see [OpenIPMI]). When ipmi_sim is not
// installed the test skips, or fails when the environment variable CI is
// "true".
package ipmitest
