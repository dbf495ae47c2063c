package task_test

import (
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/task"
)

// Decode reads one task strictly; a mistake is a FieldError naming the
// field by its JSON path.
func ExampleDecode() {
	s, err := task.Decode([]byte(`{"power": {"op": "off"}, "timeout": "2m"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Describe(), s.Timeout.Duration)

	_, err = task.Decode([]byte(`{"power": {"op": "sideways"}}`))
	var fe *task.FieldError
	fmt.Println(errors.As(err, &fe), errors.Is(err, task.ErrInvalid), fe.Path)
	// Output:
	// power off 2m0s
	// true true power.op
}

// A Spec is a one-of: exactly one action is set.
func ExampleSpec_Validate() {
	ok := task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}}
	fmt.Println(ok.Describe(), ok.Validate() == nil)

	both := task.Spec{Power: &task.PowerAction{Op: task.PowerOn}, PowerStatus: &task.PowerStatusAction{}}
	fmt.Println(both.Validate() != nil)
	// Output:
	// boot pxe (once, uefi) true
	// true
}
