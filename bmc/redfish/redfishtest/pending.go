package redfishtest

// A BMC with an invisible pending change (Config.InvisiblePending): after a
// reset request was accepted, the change takes PowerDelay to land, and
// meanwhile the system reports the settled, old PowerState, with no
// transitional state. A client that reads the state right after another
// client's request cannot tell that a change is coming: a power off that
// finds "Off" while another client's On is landing sends nothing, and the
// server turns On afterwards. Reset requests still see the pending change
// (a ForceOff during a pending On replaces it with a pending Off), as the
// BMC's own power sequencer would.

// reportedPower is the PowerState the system reports. Called with s.mu held,
// after s.settle(sys).
func (s *Server) reportedPower(sys *system) string {
	if s.cfg.InvisiblePending && sys.pending != nil {
		return sys.power
	}
	return reported(sys)
}
