package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("secureBoot", func(s *task.Spec) kind { return secureBootKind{s.SecureBoot} })
}

// secureBootKind sets Secure Boot (verified by read-back; pending for the
// next boot is done, with RebootRequired, as for BIOS settings) or resets
// its keys (accepted = done); task.SecureBootAction,
// docs/secure-boot-boot-order.md.
type secureBootKind struct{ a *task.SecureBootAction }

func (k secureBootKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k secureBootKind) usesBMC() bool                              { return true }
func (k secureBootKind) recheckable() bool                          { return k.a.ResetKeys == "" }

func (k secureBootKind) preflight(ctx context.Context, t *taskView) error {
	if _, err := k.manager(t); err != nil {
		return err
	}
	return checkNeed(ctx, t.BMC, bmc.Need{SecureBoot: &bmc.SecureBootNeed{ResetKeys: k.a.ResetKeys}})
}

func (k secureBootKind) manager(t *taskView) (bmc.SecureBootManager, error) {
	if m, ok := t.BMC.(bmc.SecureBootManager); ok {
		return m, nil
	}
	return nil, notSupported(t.ep, "manage Secure Boot")
}

func (k secureBootKind) send(ctx context.Context, t *taskView) error {
	m, err := k.manager(t)
	if err != nil || k.a.VerifyOnly {
		return err
	}
	var st bmc.SecureBootState
	if k.a.ResetKeys != "" {
		st, err = m.ResetSecureBootKeys(ctx, k.a.ResetKeys)
	} else {
		st, err = m.SetSecureBoot(ctx, *k.a.Enabled)
	}
	if err == nil {
		t.status.SecureBoot = &task.SecureBootStatus{State: st, RebootRequired: st.Pending != nil}
	}
	return err
}

func (k secureBootKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	m, err := k.manager(t)
	if err != nil {
		return false, "", err
	}
	st, err := m.SecureBoot(ctx)
	if err != nil {
		return false, "", err
	}
	t.status.SecureBoot = &task.SecureBootStatus{State: st}
	if k.a.ResetKeys != "" {
		return true, fmt.Sprintf("the BMC accepted the key reset %s; Secure Boot now %s", k.a.ResetKeys, st), nil
	}
	want := *k.a.Enabled
	switch {
	case st.Applied(want):
		return true, "Secure Boot " + st.String(), nil
	case k.a.VerifyOnly:
		return false, "", &taskFailure{conditions.ReasonVerificationFailed, "Secure Boot is not as asked: " + st.String()}
	case st.NextBoot() == want:
		t.status.SecureBoot.RebootRequired = true
		return true, "Secure Boot pending until the next boot: " + st.String() + " (reboot, then verify with a secureBoot task with verifyOnly)", nil
	}
	return false, "Secure Boot not applied yet: " + st.String(), nil
}
