// Package job_test holds the job package's end-to-end tests that need
// modules the core must not depend on (the Redfish driver and simulator in
// a child process, for the SIGKILL tests). The job package's own tests stay
// in the core module.
package job_test

import (
	"time"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/task"
)

// t0 is the fake clocks' start.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var (
	powerOn = task.Spec{Power: &task.PowerAction{Op: task.PowerOn}}
	pxeOnce = task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}}
)

// retryWait waits for the iPXE script fetch within 5 minutes, retrying the
// boot up to retries times.
func retryWait(retries int) task.Spec {
	return task.Spec{WaitForBoot: &task.WaitForBootAction{WaitForBootPolicy: task.WaitForBootPolicy{
		Deadlines:    []task.SignalDeadline{{Signal: bootstate.SignalIPXEScriptFetched, Within: task.Duration{Duration: 5 * time.Minute}}},
		Retries:      retries,
		RetryBackoff: task.Duration{Duration: 30 * time.Second},
	}}, Timeout: task.Duration{Duration: 30 * time.Minute}}
}
