package job

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

func init() { registerKind("nmi", func(*task.Spec) kind { return nmiKind{} }) }

// nmiKind sends the host a diagnostic interrupt (bmc.NMISender). An NMI
// leaves nothing to read back (docs/indicator-nmi.md): the BMC's acceptance
// is the effect. Like a power cycle it is not recheckable: a task
// interrupted between its intent and the BMC's answer sends it again (at
// least once), rather than report an NMI that may never have been sent.
type nmiKind struct{}

func (nmiKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (nmiKind) usesBMC() bool                              { return true }
func (nmiKind) recheckable() bool                          { return false }

// preflight: the driver sends NMIs, and the BMC lists Nmi where it lists
// its reset types.
func (nmiKind) preflight(ctx context.Context, t *taskView) error {
	if _, ok := t.BMC.(bmc.NMISender); !ok {
		return notSupported(t.ep, "send an NMI")
	}
	return checkNeed(ctx, t.BMC, bmc.Need{NMI: true})
}

func (nmiKind) send(ctx context.Context, t *taskView) error {
	n, ok := t.BMC.(bmc.NMISender)
	if !ok {
		return notSupported(t.ep, "send an NMI")
	}
	return n.SendNMI(ctx)
}

// check: the NMI was accepted when it was sent; there is no state to read.
func (nmiKind) check(_ context.Context, t *taskView) (bool, string, error) {
	if !t.Sent {
		return false, "an NMI cannot be read back: sending it", nil
	}
	return true, "the BMC accepted the NMI (an NMI leaves no state to read back)", nil
}
