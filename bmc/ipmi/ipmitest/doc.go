// Package ipmitest starts IPMI v2.0 BMCs on 127.0.0.1 for tests of code
// that drives BMCs over IPMI.
//
// # In-process simulator
//
// [NewServer] (or [Start] outside tests) runs go-ipmi's reference BMC on a
// free UDP port with a chassis that keeps power and boot state like a
// server: power up/down, soft shutdown turns it off, power cycle leaves it
// on, boot flags are stored and reported back; Options.PowerDelay makes
// power changes land late, as on real servers. The BMC's own Cold and Warm
// Reset are counted (the host is left alone); Options.BMCResetDowntime makes
// the BMC drop every packet for a while after one. [Server.Chassis] exposes that
// state and counts actions, so a test can check what reached the BMC.
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
