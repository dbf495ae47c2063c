package task_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/task"
)

const fwURI = "https://images.example/bmc.bin"

// TestFirmwareSatisfiedByErrorsNameTheField: each refused list names the
// entry (a job's validation prefixes "tasks[i].").
func TestFirmwareSatisfiedByErrorsNameTheField(t *testing.T) {
	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprintf("9.%d", i)
	}
	for _, c := range []struct {
		satisfiedBy []string
		want        string
	}{
		{[]string{"3", ""}, "firmwareUpdate.satisfiedBy[1]: empty"},
		{[]string{"3", "2"}, `firmwareUpdate.satisfiedBy[1]: "2" is the task's version`},
		{[]string{"3", "4", "3"}, `firmwareUpdate.satisfiedBy[2]: "3" is given twice`},
		{[]string{strings.Repeat("v", 254)}, "firmwareUpdate.satisfiedBy[0]: 254 bytes, at most 253"},
		{many, "firmwareUpdate.satisfiedBy: 65 versions, at most 64"},
	} {
		spec := task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: fwURI, Component: "BMC", Version: "2", SatisfiedBy: c.satisfiedBy}}
		err := spec.Validate()
		var fe *task.FieldError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &fe) {
			t.Errorf("satisfiedBy %.40q: error %v, want one containing %q", c.satisfiedBy, err, c.want)
		}
	}
	ok := task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: fwURI, Component: "BMC", Version: "2", SatisfiedBy: []string{"3", "4"}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a valid satisfiedBy refused: %v", err)
	}
	if a := ok.FirmwareUpdate; !a.Satisfies("2") || !a.Satisfies("4") || a.Satisfies("1") {
		t.Errorf("Satisfies: want 2 and 4, not 1")
	}
}

// TestFirmwarePath: one task per step, each satisfied by the later steps'
// versions; versions empty or given twice are refused naming the step.
func TestFirmwarePath(t *testing.T) {
	specs, err := task.FirmwarePath("BMC",
		task.FirmwareStep{Version: "A", ImageURI: fwURI + "?v=A"},
		task.FirmwareStep{Version: "B", ImageURI: fwURI + "?v=B"},
		task.FirmwareStep{Version: "C", ImageURI: fwURI + "?v=C"})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		version, image string
		satisfiedBy    []string
	}{{"A", "?v=A", []string{"B", "C"}}, {"B", "?v=B", []string{"C"}}, {"C", "?v=C", nil}}
	if len(specs) != len(want) {
		t.Fatalf("%d tasks, want %d", len(specs), len(want))
	}
	for i, w := range want {
		a := specs[i].FirmwareUpdate
		if a == nil || a.Component != "BMC" || a.Version != w.version || a.ImageURI != fwURI+w.image || fmt.Sprint(a.SatisfiedBy) != fmt.Sprint(w.satisfiedBy) {
			t.Errorf("task %d: %+v, want version %s satisfied by %v", i, a, w.version, w.satisfiedBy)
		}
		if err := specs[i].Validate(); err != nil {
			t.Errorf("task %d: %v", i, err)
		}
	}
	for _, c := range []struct {
		steps []task.FirmwareStep
		want  string
	}{
		{nil, "at least one step"},
		{[]task.FirmwareStep{{Version: "A", ImageURI: fwURI}, {ImageURI: fwURI}}, "steps[1].version: required"},
		{[]task.FirmwareStep{{Version: "A", ImageURI: fwURI}, {Version: "B", ImageURI: fwURI}, {Version: "A", ImageURI: fwURI}}, `steps[2].version: "A" is also steps[0]'s`},
		{[]task.FirmwareStep{{Version: "A", ImageURI: fwURI}, {Version: "B"}}, "steps[1].imageURI: required"},
	} {
		if _, err := task.FirmwarePath("BMC", c.steps...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.steps, err, c.want)
		}
	}
	if _, err := task.FirmwarePath("", task.FirmwareStep{Version: "A", ImageURI: fwURI}); err == nil || !strings.Contains(err.Error(), "steps[0].component: required") {
		t.Errorf("no component: error %v", err)
	}
}
