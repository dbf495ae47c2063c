package bmctest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// powerCapability is the capability an action needs, or "" for on and off.
func powerCapability(a bmc.PowerAction) Capability {
	switch a {
	case bmc.PowerActionSoftOff:
		return bmc.CapabilityPowerSoftOff
	case bmc.PowerActionCycle:
		return bmc.CapabilityPowerCycle
	case bmc.PowerActionReset:
		return bmc.CapabilityPowerReset
	}
	return ""
}

func (s *suite) power(t *testing.T, path string) {
	type pcase struct {
		name   string
		from   bmc.PowerState
		action bmc.PowerAction
		repeat bool // the action is requested twice
	}
	cases := []pcase{
		{"On", bmc.PowerOff, bmc.PowerActionOn, false},
		{"OnWhenOn", bmc.PowerOn, bmc.PowerActionOn, true},
		{"Off", bmc.PowerOn, bmc.PowerActionOff, false},
		{"OffWhenOff", bmc.PowerOff, bmc.PowerActionOff, true},
		{"SoftOff", bmc.PowerOn, bmc.PowerActionSoftOff, false},
		{"SoftOffWhenOff", bmc.PowerOff, bmc.PowerActionSoftOff, true},
		{"Cycle", bmc.PowerOn, bmc.PowerActionCycle, false},
		{"CycleWhenOff", bmc.PowerOff, bmc.PowerActionCycle, false},
		{"Reset", bmc.PowerOn, bmc.PowerActionReset, false},
		{"ResetWhenOff", bmc.PowerOff, bmc.PowerActionReset, false},
	}
	for _, c := range cases {
		s.run(t, path, c.name, func(tc *tcase) {
			// On a server that is off, soft-off is a no-op and cycle and
			// reset mean "power on": they need no capability there.
			if capab := powerCapability(c.action); capab != "" && c.from == bmc.PowerOn && tc.opts.lacks(capab) {
				tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", capab, capab)
			}
			tc.ensurePower(c.from)
			if c.action == bmc.PowerActionSoftOff && c.from == bmc.PowerOn && tc.opts.SoftOffNeverCompletes {
				tc.noErr("SetPower(soft-off)", tc.drv.SetPower(tc.ctx(), c.action))
				st, err := tc.readPower()
				tc.noErr("PowerState after soft-off", err)
				tc.Logf("Options.SoftOffNeverCompletes: soft-off accepted, power now %s; not waiting for Off", st)
				return
			}
			n := 1
			if c.repeat {
				n = 2
			}
			for i := range n {
				tc.noErr(fmt.Sprintf("SetPower(%s) #%d on a server that is %s", c.action, i+1, c.from), tc.drv.SetPower(tc.ctx(), c.action))
			}
			tc.waitPower(c.action.Target())
		})
	}
	s.run(t, path, "InvalidAction", func(tc *tcase) {
		err := tc.drv.SetPower(tc.ctx(), bmc.PowerAction("explode"))
		if err == nil {
			tc.Fatal(`SetPower("explode") succeeded; want an error for an undefined action`)
		}
		tc.requireOpError(`SetPower("explode")`, err)
		if bmc.IsTransient(err) {
			tc.Errorf(`SetPower("explode"): error %q is transient; an invalid action must be permanent`, err)
		}
	})
}

// lastResetTime checks bmc.LastResetReader: reading changes nothing, and a
// power cycle (or reset) changes the time reported. Only a change is
// required, not an order: the time is the BMC's clock.
func (s *suite) lastResetTime(t *testing.T, path string) {
	s.run(t, path, "ChangesWithCycle", func(tc *tcase) {
		r, ok := tc.drv.(bmc.LastResetReader)
		if !ok {
			tc.Skipf("%T does not implement bmc.LastResetReader", tc.drv)
		}
		if tc.opts.lacks(bmc.CapabilityLastResetTime) {
			tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityLastResetTime, bmc.CapabilityLastResetTime)
		}
		action := bmc.PowerActionCycle
		if tc.opts.lacks(bmc.CapabilityPowerCycle) {
			action = bmc.PowerActionReset
			if tc.opts.lacks(bmc.CapabilityPowerReset) {
				tc.Skipf("the peer lacks both %s and %s", bmc.CapabilityPowerCycle, bmc.CapabilityPowerReset)
			}
		}
		tc.ensurePower(bmc.PowerOn)
		before, err := r.LastResetTime(tc.ctx())
		tc.noErr("LastResetTime", err)
		again, err := r.LastResetTime(tc.ctx())
		tc.noErr("LastResetTime again", err)
		if !again.Equal(before) {
			tc.Fatalf("LastResetTime changed from %v to %v with no reset in between", before, again)
		}
		tc.noErr(fmt.Sprintf("SetPower(%s)", action), tc.drv.SetPower(tc.ctx(), action))
		tc.poll(fmt.Sprintf("LastResetTime to change after SetPower(%s)", action), func() (bool, string) {
			cur, err := r.LastResetTime(tc.ctx())
			if err != nil && !bmc.IsTransient(err) {
				tc.Fatalf("LastResetTime after SetPower(%s): permanent error: %v", action, err)
			}
			if err != nil {
				return false, err.Error()
			}
			return !cur.Equal(before), cur.String()
		})
		tc.waitPower(bmc.PowerOn)
	})
}

func (s *suite) resetBMC(t *testing.T, path string) {
	for _, rt := range []bmc.BMCResetType{bmc.BMCResetWarm, bmc.BMCResetCold} {
		s.run(t, path, string(rt), func(tc *tcase) {
			r, ok := tc.drv.(bmc.BMCResetter)
			if !ok {
				tc.Skipf("%T does not implement bmc.BMCResetter", tc.drv)
			}
			if c := resetCapability(rt); tc.opts.lacks(c) {
				tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/... checks the error", c)
			}
			// A reset of the BMC leaves the server alone: it is on before
			// and after.
			tc.ensurePower(bmc.PowerOn)
			tc.noErr(fmt.Sprintf("ResetBMC(%s)", rt), r.ResetBMC(tc.ctx(), rt))
			// The BMC must answer again, on this driver and (with
			// Target.Dial) through a new session; transient errors while
			// it restarts are fine.
			answers := func(what string, read func() (bmc.PowerState, error)) {
				tc.poll("the BMC to answer "+what+" after its reset", func() (bool, string) {
					st, err := read()
					if err != nil && !bmc.IsTransient(err) {
						tc.Fatalf("%s after ResetBMC: permanent error: %v", what, err)
					}
					if err != nil {
						return false, err.Error()
					}
					if st != bmc.PowerOn {
						tc.Fatalf("%s after ResetBMC(%s) reads %s; a BMC reset must leave the server's power alone (it was On)", what, rt, st)
					}
					return true, ""
				})
			}
			answers("PowerState", tc.readPower)
			if tc.target.Dial == nil {
				return
			}
			answers("Dial and PowerState", func() (bmc.PowerState, error) {
				d, err := tc.target.Dial(tc.ctx(), tc.target.Credentials)
				if err != nil {
					tc.requireOpError("Dial after ResetBMC", err)
					return bmc.PowerUnknown, err
				}
				defer func() { _ = d.Close(tc.ctx()) }()
				st, err := d.PowerState(tc.ctx())
				if err != nil {
					tc.requireOpError("PowerState on a new session after ResetBMC", err)
				}
				return st, err
			})
		})
	}
}

func (s *suite) closeIdempotent(tc *tcase) {
	_, err := tc.readPower()
	tc.noErr("PowerState before Close", err)
	tc.noErr("first Close", tc.drv.Close(tc.ctx()))
	tc.noErr("second Close", tc.drv.Close(tc.ctx()))
}

func (s *suite) statsCountsRequests(tc *tcase) {
	sr, ok := tc.drv.(bmc.StatsReporter)
	if !ok {
		tc.Skipf("%T does not implement bmc.StatsReporter", tc.drv)
	}
	before := sr.Stats()
	_, err := tc.readPower()
	tc.noErr("PowerState", err)
	after := sr.Stats()
	if after.Requests <= before.Requests {
		tc.Errorf("Stats().Requests went from %d to %d across a PowerState call; want it to grow", before.Requests, after.Requests)
	}
	if after.Connections < before.Connections || after.Logins < before.Logins {
		tc.Errorf("Stats went backwards: before %+v, after %+v", before, after)
	}
}

// errIs reports whether err wraps any of targets.
func errIs(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
