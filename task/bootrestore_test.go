package task_test

import (
	"errors"
	"testing"

	"github.com/bmckit/bmckit/task"
)

func TestEmulateOnceValidation(t *testing.T) {
	on, off := true, false
	ok := task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, EmulateOnce: &on}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("one-time emulated: %v", err)
	}
	if d := ok.Describe(); d != "boot pxe (once emulated)" {
		t.Errorf("Describe = %q", d)
	}
	if err := (&task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootDisk, Persistent: true, EmulateOnce: &off}}).Validate(); err != nil {
		t.Fatalf("persistent with emulateOnce false: %v", err)
	}
	bad := task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootDisk, Persistent: true, EmulateOnce: &on}}
	err := bad.Validate()
	var fe *task.FieldError
	if !errors.As(err, &fe) || fe.Path != "bootDevice.emulateOnce" {
		t.Fatalf("persistent and emulateOnce: %v; want a FieldError on bootDevice.emulateOnce", err)
	}
	s, err := task.Decode([]byte(`{"bootDevice":{"device":"pxe","emulateOnce":true}}`))
	if err != nil || s.BootDevice.EmulateOnce == nil || !*s.BootDevice.EmulateOnce {
		t.Fatalf("Decode: %+v, %v", s.BootDevice, err)
	}
}
