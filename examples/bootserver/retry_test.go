package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// TestJobRetriesWhenFirstBootIgnored: this example's boot server on
// loopback, a job [power off, PXE once, power on, wait for boot with stage
// deadlines, address binding and 2 retries] stepped as a controller would
// (job.Stepper, fake clock), and a simulated server that ignores its first
// boot (it never PXE-boots) and boots normally after the retry's power
// cycle: it fetches its iPXE script and Ignition config over HTTP and posts
// /bootstate from 127.0.0.1, the address the attempt is bound to. The first
// try times out at the iPXE stage, the second succeeds. A fetch from
// another address (127.0.0.2) gets 403 and no token.
func TestJobRetriesWhenFirstBootIgnored(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	tr, base := startBootServer(t, memstore.New(), clk)

	const uuid = "4c4c4544-0042-4a10-8031-b2c04f4e4a99"
	b := fake.New(fake.Options{Power: bmc.PowerOn, Clock: clk})
	boots := 0
	booted := make(chan error, 4)
	b.SetHook(fake.MethodSetPower, func(_ context.Context, c fake.Call) error {
		if len(c.Args) == 1 && (c.Args[0] == bmc.PowerActionOn || c.Args[0] == bmc.PowerActionCycle) {
			if boots++; boots > 1 { // the first boot is ignored: no PXE at all
				go func() { booted <- bootLikeAServer(context.Background(), base, uuid, false) }()
			}
		}
		return nil
	})
	stepper, err := job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: b, Clock: clk, Boot: tr, BootPollInterval: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer stepper.Close(ctx)
	within := func(d time.Duration) task.Duration { return task.Duration{Duration: d} }
	j := &job.Job{Name: "provision-retry", Generation: 1, CreatedAt: clk.Now(), Spec: job.Spec{
		BMC: "redfish://10.0.0.9/redfish/v1/Systems/1", SystemUUID: strings.ToUpper(uuid),
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
			{WaitForBoot: &task.WaitForBootAction{WaitForBootPolicy: task.WaitForBootPolicy{
				Deadlines: []task.SignalDeadline{
					{Signal: bootstate.SignalIPXEScriptFetched, Within: within(5 * time.Minute)},
					{Signal: bootstate.SignalIgnitionDataFetched, Within: within(5 * time.Minute), From: task.DeadlineFromPreviousSignal},
					{Signal: bootstate.SignalBootStateReceived, Within: within(10 * time.Minute), From: task.DeadlineFromPreviousSignal},
				},
				AllowedSources: []string{"127.0.0.1"},
				Retries:        2,
				RetryBackoff:   within(30 * time.Second),
			}}, Timeout: within(30 * time.Minute)},
		},
	}}
	var stored []byte
	persist := func(_ context.Context, j *job.Job) error {
		var err error
		stored, err = json.Marshal(j)
		return err
	}
	if err := persist(ctx, j); err != nil {
		t.Fatal(err)
	}
	joined := 1 // boots whose simulated server finished (the ignored one counts)
	for n := 0; ; n++ {
		if n == 300 {
			t.Fatalf("job not done after 300 steps: %s", stored)
		}
		var cur job.Job
		if err := json.Unmarshal(stored, &cur); err != nil {
			t.Fatal(err)
		}
		res, err := stepper.Step(ctx, &cur, persist)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			break
		}
		// A boot started by this step lands before the fake clock moves.
		for joined < boots {
			select {
			case err := <-booted:
				if err != nil {
					t.Fatal(err)
				}
				joined++
			case <-time.After(30 * time.Second):
				t.Fatal("simulated server did not finish booting")
			}
		}
		clk.Advance(res.RequeueAfter)
	}
	var got job.Job
	if err := json.Unmarshal(stored, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s %s: %s", got.Status.Result, got.Status.Reason, got.Status.Message)
	}
	tries := got.Status.Tasks[3].BootTries
	if len(tries) != 2 || tries[0].Stage != bootstate.ReasonIPXETimeout || tries[1].Stage != bootstate.ReasonBooted {
		t.Fatalf("tries %+v", tries)
	}
	if n := len(b.CallsTo(fake.MethodSetBootOverride)); n != 2 {
		t.Fatalf("boot override set %d times, want 2", n)
	}
	rec, err := tr.Get(ctx, uuid)
	if err != nil || rec.AttemptID != job.BootTryAttemptID(&got, 3, 2) || rec.Result != conditions.ResultSucceeded {
		t.Fatalf("boot record %+v %v", rec, err)
	}
	if len(rec.Previous) == 0 || rec.Previous[0].Result != conditions.ResultTimedOut || !strings.Contains(rec.Previous[0].Message, "stage IPXEScriptFetched") {
		t.Fatalf("first attempt in the record's history: %+v", rec.Previous)
	}

	// Another address on the same network gets neither the script (with
	// its token) nor a way to post.
	foreign := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	defer foreign.CloseIdleConnections()
	resp, err := foreign.Get(base + "/ipxe/" + uuid)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "token") {
		t.Fatalf("foreign fetch: %d %s", resp.StatusCode, body)
	}
	before := rec.Revision
	tok, _ := tr.Token(uuid, rec.AttemptID)
	cb, _ := json.Marshal(bootstate.Request{SystemUUID: uuid, AttemptID: rec.AttemptID, Token: tok, Signal: bootstate.SignalBootStateReceived})
	resp, err = foreign.Post(base+"/bootstate", "application/json", strings.NewReader(string(cb)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign callback with a valid token: %d", resp.StatusCode)
	}
	if after, _ := tr.Get(ctx, uuid); after.Revision != before {
		t.Fatal("a refused request wrote the record")
	}
}
