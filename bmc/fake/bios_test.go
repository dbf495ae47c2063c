package fake_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
)

// TestBIOSPendingUntilBoot: a change is pending, survives a power off and
// reads back after the next boot, whichever way the server boots.
func TestBIOSPendingUntilBoot(t *testing.T) {
	for _, boot := range []bmc.PowerAction{bmc.PowerActionOn, bmc.PowerActionCycle, bmc.PowerActionReset} {
		t.Run(string(boot), func(t *testing.T) {
			ctx := context.Background()
			power := bmc.PowerOn
			if boot == bmc.PowerActionOn {
				power = bmc.PowerOff
			}
			srv, drv := dialTarget(t, fake.Options{Power: power})
			c := drv.(bmc.BIOSConfigurer)
			res, err := c.SetBIOSAttributes(ctx, bmc.BIOSAttributes{"BootMode": "Bios", "PxeRetryCount": "5"})
			if err != nil {
				t.Fatal(err)
			}
			want := bmc.BIOSAttributes{"BootMode": "Bios", "PxeRetryCount": "5"}
			if !res.RebootRequired || !reflect.DeepEqual(res.Pending, want) {
				t.Fatalf("SetBIOSAttributes = %+v, want RebootRequired with pending %v", res, want)
			}
			if got := srv.BIOS(); got.Attributes["BootMode"] != "Uefi" {
				t.Fatalf("applied before the boot: %+v", got)
			}
			if err := drv.SetPower(ctx, boot); err != nil {
				t.Fatal(err)
			}
			got, err := c.BIOSSettings(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := want.Differing(got.Attributes); len(d) > 0 || len(got.Pending) > 0 {
				t.Fatalf("after %s: %+v; want %v applied and nothing pending", boot, got, want)
			}
		})
	}
}

// TestBIOSBackToCurrentCancelsPending: asking for the current value again
// drops the pending change.
func TestBIOSBackToCurrentCancelsPending(t *testing.T) {
	ctx := context.Background()
	_, drv := dialTarget(t, fake.Options{})
	c := drv.(bmc.BIOSConfigurer)
	if _, err := c.SetBIOSAttributes(ctx, bmc.BIOSAttributes{"SriovEnable": "true"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.SetBIOSAttributes(ctx, bmc.BIOSAttributes{"SriovEnable": "false"})
	if err != nil || res.RebootRequired || len(res.Pending) != 0 {
		t.Fatalf("SetBIOSAttributes back to the current value = %+v, %v; want nothing pending", res, err)
	}
}

// TestBIOSInvalidRefusedBeforeChange: an invalid set is refused naming the
// attribute, and changes nothing (not even the valid attributes of the set).
func TestBIOSInvalidRefusedBeforeChange(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialTarget(t, fake.Options{})
	c := drv.(bmc.BIOSConfigurer)
	_, err := c.SetBIOSAttributes(ctx, bmc.BIOSAttributes{"BootMode": "Bios", "ProcVirtualization": "Maybe"})
	var ae *bmc.BIOSAttributeError
	if !errors.As(err, &ae) || ae.Attribute != "ProcVirtualization" {
		t.Fatalf("error %v: want a BIOSAttributeError naming ProcVirtualization", err)
	}
	if got := srv.BIOS(); len(got.Pending) != 0 {
		t.Fatalf("a refused set left pending values: %v", got.Pending)
	}
}
