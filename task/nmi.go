package task

// NMIAction sends the host a diagnostic interrupt (NMI), which makes a hung
// operating system write a crash dump (bmc.NMISender: Redfish
// ComputerSystem.Reset with ResetType Nmi, IPMI Chassis Control "pulse
// diagnostic interrupt"). An NMI leaves no state to read back: the task
// succeeds when the BMC accepted it. A server that is off fails the task
// (an NMI needs a running host); a BMC that does not offer it fails the
// job's preflight with reason NotSupported. A task interrupted by a crash
// between storing its intent and storing the BMC's answer sends the NMI
// again (docs/indicator-nmi.md). It has no fields.
type NMIAction struct{}

func (*NMIAction) describe() string      { return "send NMI" }
func (*NMIAction) validate(string) error { return nil }
