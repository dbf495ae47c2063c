package redfish_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/retry"
	"github.com/bmckit/bmckit/storage/memstore"
)

// A BMC URL that carries a password in its query is refused before anything
// is stored, with an error that says where credentials go; a URL with an
// option the driver does not know fails the job at dial, and neither the
// job's conditions and message nor a log line repeats the query's value.
func TestURLQuerySecretsNeverEchoed(t *testing.T) {
	const secret = "hunter2-correct-horse"
	srv := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	var logs logBuffer
	opts := logs.options(testOptions())
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(opts))
	store := memstore.New()
	cfg := job.Config{
		Store: store, StepperConfig: job.StepperConfig{
			Dialer:       &dialer,
			Logger:       opts.Logger,
			Credentials:  bmc.StaticCredentials{"lab": srv.Credentials()},
			PollInterval: 5 * time.Millisecond,
			Retry:        retry.Policy{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond, Jitter: 0.2},
		},

		ScanInterval: 20 * time.Millisecond,
	}
	r, err := job.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{"?password=" + secret, "?Password=" + secret, "?pass%77ord=" + secret, "?user=admin&pw=" + secret, "?token=" + secret} {
		_, err := r.Submit(ctx, "refused", netbootSpec(srv.Address("1")+q))
		if err == nil {
			t.Fatalf("a BMC URL with %q was accepted", strings.ReplaceAll(q, secret, "…"))
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "credentialsRef") {
			t.Fatalf("refusal %q: must not repeat the value and must say where credentials go", err)
		}
	}
	if keys, err := store.List(ctx, ""); err != nil || len(keys) != 0 {
		t.Fatalf("refused specs left %d records (%v)", len(keys), err)
	}

	j := jobtest.RunAll(t, cfg, map[string]job.Spec{"unknown-option": netbootSpec(srv.Address("1") + "?foo=" + secret)}, time.Minute)["unknown-option"]
	if j.Status.Result != conditions.ResultFailed || !strings.Contains(j.Status.Message, `unknown option "foo"`) {
		t.Fatalf("job with an unknown URL option: %s/%s %q; want Failed naming the option", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	for _, c := range j.Status.Conditions {
		if strings.Contains(c.Message, secret) {
			t.Fatalf("condition %s repeats the URL's query: %q", c.Type, c.Message)
		}
	}
	for _, ts := range j.Status.Tasks {
		for _, c := range ts.Conditions {
			if strings.Contains(c.Message, secret) {
				t.Fatalf("task condition %s repeats the URL's query: %q", c.Type, c.Message)
			}
		}
	}
	if strings.Contains(j.Status.Message, secret) {
		t.Fatalf("job message repeats the URL's query: %q", j.Status.Message)
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatal("a log line repeats the URL's query")
	}
}
