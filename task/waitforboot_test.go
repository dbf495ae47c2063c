package task_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/task"
)

func TestWaitForBootPolicyJSONAndValidation(t *testing.T) {
	s, err := task.Decode([]byte(`{"waitForBoot": {"mode": "AllOf", "signals": ["IgnitionDataFetched", "BootStateReceived"],
		"deadlines": [{"signal": "IPXEScriptFetched", "within": "5m"},
		              {"signal": "IgnitionDataFetched", "within": "10m", "from": "PreviousSignal"}],
		"allowedSources": ["10.0.0.7", "10.1.0.0/24"], "retries": 2, "retryBackoff": "30s"}, "timeout": "20m"}`))
	if err != nil {
		t.Fatal(err)
	}
	p := s.WaitForBoot.WaitForBootPolicy
	if p.Retries != 2 || p.RetryBackoff.Duration != 30*time.Second || p.Deadlines[1].From != task.DeadlineFromPreviousSignal || len(p.AllowedSources) != 2 {
		t.Fatalf("decoded %+v", p)
	}
	if p.BackoffBefore(2) != 30*time.Second || p.BackoffBefore(4) != 2*time.Minute {
		t.Fatalf("backoff %s %s", p.BackoffBefore(2), p.BackoffBefore(4))
	}
	for _, c := range []struct{ body, path string }{
		{`{"mode": "Some", "signals": ["A"]}`, "waitForBoot.mode"},
		{`{"mode": "AnyOf"}`, "waitForBoot.signals"},
		{`{"signals": ["bad name"]}`, "waitForBoot.signals[0]"},
		{`{"deadlines": [{"signal": "A", "within": "0s"}]}`, "waitForBoot.deadlines[0].within"},
		{`{"deadlines": [{"signal": "A", "within": "1m", "from": "PreviousSignal"}]}`, "waitForBoot.deadlines[0].from"},
		{`{"deadlines": [{"signal": "A", "within": "1m"}, {"signal": "A", "within": "1m"}]}`, "waitForBoot.deadlines[1].signal"},
		{`{"allowedSources": ["10.0.0.300"]}`, "waitForBoot.allowedSources[0]"},
		{`{"retries": 11}`, "waitForBoot.retries"},
		{`{"retryBackoff": "2h"}`, "waitForBoot.retryBackoff"},
	} {
		_, err := task.Decode([]byte(`{"waitForBoot": ` + c.body + `}`))
		var fe *task.FieldError
		if !errors.As(err, &fe) || fe.Path != c.path || !errors.Is(err, task.ErrInvalid) {
			t.Fatalf("%s: %v, want a FieldError at %s", c.body, err, c.path)
		}
		if strings.Contains(fe.Msg, "\n") {
			t.Fatalf("multi-line message %q", fe.Msg)
		}
	}
}
