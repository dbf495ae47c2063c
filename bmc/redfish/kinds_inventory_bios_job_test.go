package redfish_test

// inventory and bios tasks through job.Runner (and the Stepper) and the
// Redfish driver against redfishtest, over HTTP.

import (
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

func TestInventoryJob(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	j := runJob(t, oneTask(srv, task.Spec{Inventory: &task.InventoryAction{}}), srv.Credentials(), testOptions())
	requireSucceeded(t, j)
	inv := j.Status.Tasks[0].Inventory
	if inv == nil || len(inv.Processors) == 0 || len(inv.NetworkInterfaces) == 0 || len(inv.Firmware) == 0 {
		t.Fatalf("inventory: %+v", inv)
	}
	for _, n := range inv.NetworkInterfaces {
		if n.MACAddress == "" {
			t.Errorf("interface without a MAC: %+v", n)
		}
	}
}

// The BIOS flow on each shape of BMC: set, power cycle, verify
// after the boot, on the Runner.
func TestBIOSJob(t *testing.T) {
	want := map[string]string{"BootMode": "Bios", "ProcVirtualization": "Disabled"}
	for _, c := range []struct {
		name   string
		mode   redfishtest.BIOSMode
		reboot bool
	}{
		{"on reset (Dell's shape)", redfishtest.BIOSOnReset, true},
		{"full settings copy (iLO's shape)", redfishtest.BIOSFullSettingsCopy, true},
		{"immediate", redfishtest.BIOSImmediate, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redfishtest.NewServer(redfishtest.Config{BIOS: c.mode, PowerDelay: 20 * time.Millisecond})
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runJob(t, oneTask(srv,
				task.Spec{BIOS: &task.BIOSAction{Attributes: want}},
				task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}},
				task.Spec{BIOS: &task.BIOSAction{Attributes: want, VerifyOnly: true}},
			), srv.Credentials(), testOptions())
			requireSucceeded(t, j)
			if got := j.Status.Tasks[0].BIOS.RebootRequired; got != c.reboot {
				t.Errorf("RebootRequired %v, want %v", got, c.reboot)
			}
			if got := j.Status.Tasks[2].BIOS.Attributes["BootMode"]; got != "Bios" {
				t.Errorf("verified BootMode %q", got)
			}
		})
	}
}

// Without the reboot, on a BMC that applies at the next boot, the verify
// task fails naming the attribute; an invalid value is refused before any
// PATCH.
func TestBIOSJobFailures(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	want := map[string]string{"BootMode": "Bios"}
	j := runJob(t, oneTask(srv,
		task.Spec{BIOS: &task.BIOSAction{Attributes: want}},
		task.Spec{BIOS: &task.BIOSAction{Attributes: want, VerifyOnly: true}},
	), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultFailed || j.Status.Tasks[1].Reason != conditions.ReasonVerificationFailed {
		t.Fatalf("want verify to fail: %s %s %s", j.Status.Result, j.Status.Tasks[1].Reason, j.Status.Tasks[1].Message)
	}

	n := len(srv.Requests())
	j = runJob(t, oneTask(srv, task.Spec{BIOS: &task.BIOSAction{Attributes: map[string]string{"BootMode": "Legacy"}}}), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultFailed || j.Status.Tasks[0].Reason != conditions.ReasonInvalidSpec {
		t.Fatalf("want InvalidSpec: %s %s %s", j.Status.Result, j.Status.Tasks[0].Reason, j.Status.Tasks[0].Message)
	}
	for _, r := range summary(since(srv, n)) {
		if len(r) >= 5 && r[:5] == "PATCH" {
			t.Errorf("a change was sent for an invalid value: %s", r)
		}
	}
}

// The Stepper path (a controller), on a fake clock: set, cycle, verify.
func TestBIOSStepper(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	srv := redfishtest.NewServer(redfishtest.Config{Clock: clk, PowerDelay: 100 * time.Millisecond})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	s := newRedfishStepper(t, srv, clk)
	want := map[string]string{"BootMode": "Bios"}
	j := &job.Job{Name: "bios", Generation: 1, CreatedAt: clk.Now(), Spec: oneTask(srv,
		task.Spec{BIOS: &task.BIOSAction{Attributes: want}},
		task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}},
		task.Spec{BIOS: &task.BIOSAction{Attributes: want, VerifyOnly: true}},
		task.Spec{Inventory: &task.InventoryAction{}},
	)}
	if err := stepAll(t, s, clk, j, &crashHost{}); err != nil {
		t.Fatal(err)
	}
	requireSucceeded(t, j)
}

// Cray EX (object-valued attributes, some structured, no registry) through
// the Runner: the read stores every attribute; an unknown attribute and a
// structured one of unknown type fail the task as InvalidSpec, naming it,
// with no change sent; a typed one is set, applied by the cycle and
// verified.
func TestBIOSJobCrayEX(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.VendorConfig(redfishtest.VendorCrayEX))
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")

	j := runJob(t, oneTask(srv, task.Spec{BIOS: &task.BIOSAction{}}), srv.Credentials(), testOptions())
	requireSucceeded(t, j)
	if st := j.Status.Tasks[0].BIOS; st == nil || st.Attributes["BootMode"] != "Uefi" || st.Attributes["BootOrder"] != `["Pxe","Hdd","Cd"]` {
		t.Fatalf("bios read: %+v; want BootMode Uefi (current_value) and BootOrder as JSON", st)
	}

	for _, c := range []struct {
		attrs map[string]string
		name  string
	}{
		{map[string]string{"NoSuchKnob": "1"}, "NoSuchKnob"},
		{map[string]string{"BootOrder": `["Hdd"]`}, "BootOrder"},
	} {
		n := len(srv.Requests())
		j := runJob(t, oneTask(srv, task.Spec{BIOS: &task.BIOSAction{Attributes: c.attrs}}), srv.Credentials(), testOptions())
		ts := j.Status.Tasks[0]
		if j.Status.Result != conditions.ResultFailed || ts.Reason != conditions.ReasonInvalidSpec ||
			!strings.Contains(ts.Message, c.name) || strings.ContainsAny(ts.Message, "\n\r") {
			t.Fatalf("bios %v: %s, task %s: %q; want Failed InvalidSpec naming %s on one line", c.attrs, j.Status.Result, ts.Reason, ts.Message, c.name)
		}
		for _, r := range summary(since(srv, n)) {
			if strings.HasPrefix(r, "PATCH") {
				t.Fatalf("bios %v sent %s", c.attrs, r)
			}
		}
	}

	want := map[string]string{"BootMode": "Bios", "SriovEnable": "true"}
	j = runJob(t, oneTask(srv,
		task.Spec{BIOS: &task.BIOSAction{Attributes: want}},
		task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}},
		task.Spec{BIOS: &task.BIOSAction{Attributes: want, VerifyOnly: true}},
	), srv.Credentials(), testOptions())
	requireSucceeded(t, j)
	if !j.Status.Tasks[0].BIOS.RebootRequired {
		t.Errorf("set on Cray EX: RebootRequired false; the settings object holds it pending")
	}
	if cur, _ := srv.BIOSAttributes("1"); cur["BootMode"] != "Bios" || cur["SriovEnable"] != true {
		t.Fatalf("after the job: %v", cur)
	}
}

// OpenBMC's Bios without attributes: a bios task fails as NotSupported,
// like a system without a Bios, and sends no change.
func TestBIOSJobOpenBMC(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.VendorConfig(redfishtest.VendorOpenBMC))
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	for _, a := range []*task.BIOSAction{{}, {Attributes: map[string]string{"BootMode": "Bios"}}} {
		j := runJob(t, oneTask(srv, task.Spec{BIOS: a}), srv.Credentials(), testOptions())
		if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonNotSupported {
			t.Fatalf("bios %+v: %s (%s): %s; want Failed NotSupported", a, j.Status.Result, j.Status.Reason, j.Status.Message)
		}
	}
	for _, r := range summary(srv.Requests()) {
		if strings.HasPrefix(r, "PATCH") {
			t.Fatalf("sent %s", r)
		}
	}
}
