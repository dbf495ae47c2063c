package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// TestJobsCompleteOnBoot is the quickstart-style end-to-end run: a fleet of
// fake BMCs, jobs [power off, one-time PXE, power on, wait for boot] on the
// job runner, and this example's boot server on loopback. Powering a server
// on starts a simulated server that fetches its iPXE script and Ignition
// config over HTTP and posts /bootstate; its job completes on that. One
// server never posts: its job fails once its boot times out.
func TestJobsCompleteOnBoot(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := memstore.New()
	tr, base := startBootServer(t, store, nil)
	go func() { _ = tr.Run(ctx) }()

	const servers = 6
	const silent = 4
	fleet := fake.NewFleet()
	bootErrs := make(chan error, servers)
	runner, err := job.NewRunner(job.Config{
		Store: store, StepperConfig: job.StepperConfig{
			Dialer:      fleet,
			Boot:        tr,
			Credentials: bmc.StaticCredentials{"bmc": {Username: "admin", Password: "pw"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = runner.Start(ctx) }()

	for i := range servers {
		uuid := fmt.Sprintf("4c4c4544-0042-4a10-8031-%012x", 0xb2c04f4e0000+i)
		addr := fmt.Sprintf("redfish://10.0.0.%d/redfish/v1/Systems/1", i+1)
		b, err := fleet.AddNew(addr, fake.Options{Power: bmc.PowerOn})
		if err != nil {
			t.Fatal(err)
		}
		b.SetHook(fake.MethodSetPower, func(ctx context.Context, c fake.Call) error {
			if len(c.Args) == 1 && c.Args[0] == bmc.PowerActionOn {
				go func() { bootErrs <- bootLikeAServer(context.Background(), base, uuid, i == silent) }()
			}
			return nil
		})
		bootTimeout := 30 * time.Second
		if i == silent {
			bootTimeout = 2 * time.Second
		}
		_, err = runner.Submit(ctx, fmt.Sprintf("provision-%d", i), job.Spec{
			BMC: addr, CredentialsRef: "bmc", SystemUUID: strings.ToUpper(uuid),
			Tasks: []task.Spec{
				{Power: &task.PowerAction{Op: task.PowerOff}},
				{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
				{Power: &task.PowerAction{Op: task.PowerOn}},
				{WaitForBoot: &task.WaitForBootAction{}, Timeout: task.Duration{Duration: bootTimeout}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range servers {
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
		j, err := runner.Wait(wctx, fmt.Sprintf("provision-%d", i))
		wcancel()
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		if i == silent {
			// The job's task timeout and the boot deadline are the same
			// instant; whichever the runner sees first, the job fails as
			// TimedOut, and the boot record says what the server did.
			if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonTimedOut {
				t.Fatalf("silent server's job: %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
			}
			rec, err := tr.Wait(ctx, j.Spec.SystemUUID, job.BootAttemptID(j, 3))
			if err != nil || rec.Result != conditions.ResultTimedOut || !strings.Contains(rec.Message(), "received IPXEScriptFetched, IgnitionDataFetched") {
				t.Fatalf("silent server's boot record: %+v %v", rec, err)
			}
			continue
		}
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %d: %s %s: %s", i, j.Status.Result, j.Status.Reason, j.Status.Message)
		}
		rec, err := tr.Get(ctx, j.Spec.SystemUUID)
		if err != nil || rec.Result != conditions.ResultSucceeded || rec.AttemptID != job.BootAttemptID(j, 3) {
			t.Fatalf("boot record of job %d: %+v %v", i, rec, err)
		}
	}
	for range servers {
		if err := <-bootErrs; err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	<-runDone
}

// bootLikeAServer fetches the iPXE script for the system, the Ignition
// config it points at, and posts the callback the Ignition unit carries
// (unless silent: an OS that never comes up).
func bootLikeAServer(ctx context.Context, base, uuid string, silent bool) error {
	get := func(u string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, b)
		}
		return b, nil
	}
	script, err := get(base + "/ipxe/" + uuid)
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`ignition\.config\.url=(\S+)`).FindSubmatch(script)
	if m == nil {
		return fmt.Errorf("no Ignition URL in %q", script)
	}
	raw, err := get(string(m[1]))
	if err != nil {
		return err
	}
	if silent {
		return nil
	}
	var ign struct {
		Systemd struct {
			Units []struct{ Contents string } `json:"units"`
		} `json:"systemd"`
	}
	if err := json.Unmarshal(raw, &ign); err != nil || len(ign.Systemd.Units) == 0 {
		return fmt.Errorf("ignition %q: %v", raw, err)
	}
	body := regexp.MustCompile(`--data '([^']+)'`).FindStringSubmatch(ign.Systemd.Units[0].Contents)
	if body == nil {
		return fmt.Errorf("no callback in unit %q", ign.Systemd.Units[0].Contents)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/bootstate", bytes.NewReader([]byte(body[1])))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST /bootstate: %d %s", resp.StatusCode, b)
	}
	return nil
}
