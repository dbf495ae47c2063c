package task_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// The generated DeepCopy gives independent copies: mutating anything
// reachable from the copy leaves the original alone.
func TestSpecDeepCopyIsIndependent(t *testing.T) {
	yes := true
	orig := task.Spec{
		Name:       "boot",
		BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://boot.example/a.efi", EmulateOnce: &yes},
		Timeout:    task.Duration{Duration: time.Minute},
	}
	cp := orig.DeepCopy()
	require.NotSame(t, orig.BootDevice, cp.BootDevice)
	require.NotSame(t, orig.BootDevice.EmulateOnce, cp.BootDevice.EmulateOnce)
	assert.Equal(t, orig, *cp)
	cp.BootDevice.URI = "https://other.example/b.efi"
	*cp.BootDevice.EmulateOnce = false
	cp.Timeout.Duration = time.Hour
	assert.Equal(t, "https://boot.example/a.efi", orig.BootDevice.URI)
	assert.True(t, *orig.BootDevice.EmulateOnce)
	assert.Equal(t, time.Minute, orig.Timeout.Duration)

	wait := task.Spec{WaitForBoot: &task.WaitForBootAction{WaitForBootPolicy: task.WaitForBootPolicy{
		Mode: task.BootAnyOf, Signals: []string{"IPXEScriptFetched", "BootStateReceived"},
		Deadlines:      []task.SignalDeadline{{Signal: "IPXEScriptFetched", Within: task.Duration{Duration: time.Minute}}},
		AllowedSources: []string{"10.0.0.0/8"},
	}}}
	wcp := wait.DeepCopy()
	assert.Equal(t, wait, *wcp)
	wcp.WaitForBoot.Signals[0] = "X"
	wcp.WaitForBoot.Deadlines[0].Within.Duration = time.Hour
	wcp.WaitForBoot.AllowedSources[0] = "0.0.0.0/0"
	assert.Equal(t, "IPXEScriptFetched", wait.WaitForBoot.Signals[0])
	assert.Equal(t, time.Minute, wait.WaitForBoot.Deadlines[0].Within.Duration)
	assert.Equal(t, "10.0.0.0/8", wait.WaitForBoot.AllowedSources[0])

	for name, s := range validSpecs() {
		assert.Equal(t, s, *s.DeepCopy(), name)
	}
}

func TestStatusDeepCopyIsIndependent(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	orig := task.Status{
		Phase: task.PhaseDone, Result: conditions.ResultSucceeded, Attempts: 2,
		StartTime: timestamp.Ptr(t0), RequestTime: timestamp.Ptr(t0), CompletionTime: timestamp.Ptr(t0), NextAttemptTime: timestamp.Ptr(t0),
		BootTries:   []task.BootTry{{Try: 1, Step: task.BootTryDone, NotBefore: timestamp.Ptr(t0), StartTime: timestamp.Ptr(t0), EndTime: timestamp.Ptr(t0)}},
		BootRestore: &task.BootRestore{Emulated: true, Previous: task.BootOverride{Device: "disk"}, State: task.BootRestorePending},
	}
	conditions.MarkCompleted(&orig.Conditions, 1, conditions.ResultSucceeded, "", "done", t0)
	cp := orig.DeepCopy()
	assert.Equal(t, orig, *cp)

	later := t0.Add(time.Hour)
	cp.Conditions[0].Status = conditions.False
	cp.Conditions[0].LastTransitionTime = timestamp.New(later)
	cp.StartTime.Time = later
	cp.RequestTime.Time = later
	cp.CompletionTime.Time = later
	cp.NextAttemptTime.Time = later
	cp.BootTries[0].NotBefore.Time = later
	cp.BootTries[0].StartTime.Time = later
	cp.BootTries[0].EndTime.Time = later
	cp.BootTries[0].Step = task.BootTryWaiting
	cp.BootRestore.Previous.Device = "pxe"
	cp.BootRestore.State = task.BootRestoreFailed

	assert.True(t, conditions.IsTrue(orig.Conditions, conditions.TypeCompleted))
	assert.Equal(t, t0, orig.Conditions[0].LastTransitionTime.Time)
	for _, p := range []*timestamp.Time{orig.StartTime, orig.RequestTime, orig.CompletionTime, orig.NextAttemptTime,
		orig.BootTries[0].NotBefore, orig.BootTries[0].StartTime, orig.BootTries[0].EndTime} {
		assert.Equal(t, t0, p.Time)
	}
	assert.Equal(t, task.BootTryDone, orig.BootTries[0].Step)
	assert.Equal(t, "disk", orig.BootRestore.Previous.Device)
	assert.Equal(t, task.BootRestorePending, orig.BootRestore.State)
}

// WaitForBootPolicy is embedded with `json:",inline"` (controller-gen needs
// the tag); its fields stay flat in the wait-for-boot JSON.
func TestWaitForBootPolicyInlineJSON(t *testing.T) {
	s, err := task.Decode([]byte(`{"waitForBoot":{"systemUUID":"4C4C4544-0047-3510-8052-B4C04F564433","mode":"AnyOf","signals":["BootStateReceived"],"retries":2}}`))
	require.NoError(t, err)
	assert.Equal(t, task.BootAnyOf, s.WaitForBoot.Mode)
	assert.Equal(t, 2, s.WaitForBoot.Retries)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, `{"waitForBoot":{"systemUUID":"4C4C4544-0047-3510-8052-B4C04F564433","mode":"AnyOf","signals":["BootStateReceived"],"retries":2}}`, string(b))
}

// The Pattern marker on Duration is DurationPattern, character for
// character.
func TestDurationMarkerIsDurationPattern(t *testing.T) {
	src, err := os.ReadFile("duration.go")
	require.NoError(t, err)
	m := regexp.MustCompile("(?m)^// \\+kubebuilder:validation:Pattern=`([^`]*)`$").FindSubmatch(src)
	require.NotNil(t, m, "no Pattern marker in duration.go")
	assert.Equal(t, task.DurationPattern, string(m[1]))
}

func TestDurationPattern(t *testing.T) {
	re := regexp.MustCompile(task.DurationPattern)
	for _, s := range []string{"0", "0s", "30s", "1m30s", "1.5h", ".5s", "1.s", "100ms", "10us", "10µs", "10μs", "5ns", "2h45m0.5s", "7m0s"} {
		assert.True(t, re.MatchString(s), "%q should match", s)
		d, err := time.ParseDuration(s)
		assert.NoError(t, err, s)
		assert.GreaterOrEqual(t, d, time.Duration(0))
	}
	for _, s := range []string{"", "-1s", "+1s", "30", "1d", "s", ".s", "1 s", "1m 30s", "1e3s", "0x10s", "PT30S", "1S"} {
		assert.False(t, re.MatchString(s), "%q should not match", s)
	}
	// Whatever a Duration encodes to (it is never negative in bmckit) matches.
	for _, d := range []time.Duration{0, 1, time.Microsecond, 1500 * time.Millisecond, 90 * time.Second, 7 * 24 * time.Hour, 1<<63 - 1} {
		b, err := task.Duration{Duration: d}.MarshalText()
		require.NoError(t, err)
		assert.True(t, re.MatchString(string(b)), "%v encodes as %q", d, b)
	}
}

// FuzzDurationPattern checks DurationPattern against time.ParseDuration:
// an unsigned string Go parses to a non-negative duration matches, and a
// string that matches parses (once its numbers are made small, so that an
// overflow, which the pattern does not bound, is not counted).
func FuzzDurationPattern(f *testing.F) {
	for _, s := range []string{"0", "1m30s", ".5h", "1.s", "10µs", "-1s", "1", "1d", "9999999999999h"} {
		f.Add(s)
	}
	re := regexp.MustCompile(task.DurationPattern)
	digits := regexp.MustCompile(`[0-9]+`)
	f.Fuzz(func(t *testing.T, s string) {
		match := re.MatchString(s)
		if d, err := time.ParseDuration(s); err == nil && d >= 0 && !strings.HasPrefix(s, "+") && !strings.HasPrefix(s, "-") && !match {
			t.Fatalf("%q parses as %v but does not match the pattern", s, d)
		}
		if match && s != "0" {
			small := digits.ReplaceAllString(s, "1")
			if _, err := time.ParseDuration(small); err != nil {
				t.Fatalf("%q matches the pattern but %q does not parse: %v", s, small, err)
			}
		}
	})
}
