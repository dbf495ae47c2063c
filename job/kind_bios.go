package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/internal/biosattrs"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("bios", func(s *task.Spec) kind { return biosKind{s.BIOS} })
}

// biosKind reads or sets BIOS attributes (bmc.BIOSConfigurer); see
// task.BIOSAction and docs/inventory-bios.md, "The bios task".
//
//   - check reads the settings: every requested attribute at its value is
//     done ("already present" on a resume, so nothing is sent twice); all of
//     them pending for the next boot is done too, with RebootRequired (the
//     job's next tasks reboot and verify), unless VerifyOnly, which fails
//     naming the attributes that differ.
//   - send checks the attributes against the BMC's registry first (an
//     invalid one fails the task, reason InvalidSpec, naming it, with no
//     change sent), then requests them.
//   - A BMC that applies at once but shows it late is polled until the
//     task's timeout.
type biosKind struct{ a *task.BIOSAction }

func (k biosKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k biosKind) usesBMC() bool                              { return true }

// recheckable: a set is done when its values are there (or pending); a
// read is re-made.
func (k biosKind) recheckable() bool { return len(k.a.Attributes) > 0 }

// preflight: the BMC has a BIOS (a Bios resource with attributes) and
// knows every attribute the task names, with a value it takes (an unknown
// one fails with reason InvalidSpec).
func (k biosKind) preflight(ctx context.Context, t *taskView) error {
	bc, err := k.configurer(t)
	if err != nil {
		return err
	}
	if len(k.a.Attributes) == 0 {
		_, err := bc.BIOSSettings(ctx)
		return err
	}
	reg, err := bc.BIOSRegistry(ctx)
	if err != nil {
		return err
	}
	if err := bmc.ValidateBIOSAttributes(reg, bmc.BIOSAttributes(k.a.Attributes)); err != nil {
		if errors.Is(err, bmc.ErrInvalidBIOSAttribute) {
			return &taskFailure{conditions.ReasonInvalidSpec, err.Error()}
		}
		return err
	}
	return nil
}

func (k biosKind) configurer(t *taskView) (bmc.BIOSConfigurer, error) {
	if bc, ok := t.BMC.(bmc.BIOSConfigurer); ok {
		return bc, nil
	}
	return nil, notSupported(t.ep, "configure the BIOS")
}

func (k biosKind) status(t *taskView) *task.BIOSStatus {
	ts := t.status
	if ts.BIOS == nil {
		ts.BIOS = &task.BIOSStatus{}
	}
	return ts.BIOS
}

func (k biosKind) send(ctx context.Context, t *taskView) error {
	if len(k.a.Attributes) == 0 || k.a.VerifyOnly {
		return nil
	}
	bc, err := k.configurer(t)
	if err != nil {
		return err
	}
	reg, err := bc.BIOSRegistry(ctx)
	if err != nil {
		return err
	}
	attrs := bmc.BIOSAttributes(k.a.Attributes)
	if err := bmc.ValidateBIOSAttributes(reg, attrs); err != nil {
		if errors.Is(err, bmc.ErrInvalidBIOSAttribute) {
			return &taskFailure{conditions.ReasonInvalidSpec, err.Error()}
		}
		return err
	}
	ap, err := bc.SetBIOSAttributes(ctx, attrs)
	if err != nil {
		return err
	}
	st := k.status(t)
	st.RebootRequired = ap.RebootRequired
	st.Pending, st.Truncated = biosattrs.Bound(ap.Pending, st.Truncated)
	return nil
}

func (k biosKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	bc, err := k.configurer(t)
	if err != nil {
		return false, "", err
	}
	cur, err := bc.BIOSSettings(ctx)
	if err != nil {
		return false, "", err
	}
	st := k.status(t)
	st.Truncated = false
	st.Pending, st.Truncated = biosattrs.Bound(cur.Pending, st.Truncated)
	want := bmc.BIOSAttributes(k.a.Attributes)
	if len(want) == 0 {
		st.Attributes, st.Truncated = biosattrs.Bound(cur.Attributes, st.Truncated)
		return true, fmt.Sprintf("%d attributes, %d pending", len(cur.Attributes), len(cur.Pending)), nil
	}
	st.Attributes = bmc.BIOSAttributes{}
	for name := range want {
		if v, ok := cur.Attributes[name]; ok {
			st.Attributes[name] = v
		}
	}
	differ := want.Differing(cur.Attributes)
	if len(differ) == 0 {
		st.RebootRequired = false
		return true, "BIOS attributes set: " + strings.Join(slices.Sorted(maps.Keys(want)), ", "), nil
	}
	if k.a.VerifyOnly {
		return false, "", &taskFailure{conditions.ReasonVerificationFailed, "BIOS attributes differ: " + biosattrs.DescribeDiffer(differ, cur.Attributes)}
	}
	if len(want.Differing(biosattrs.Merged(cur.Attributes, cur.Pending))) == 0 {
		st.RebootRequired = true
		return true, "BIOS attributes pending until the next boot: " + strings.Join(differ, ", ") + " (reboot, then verify with a bios task with verifyOnly)", nil
	}
	return false, "BIOS attributes not applied yet: " + biosattrs.DescribeDiffer(differ, cur.Attributes), nil
}
