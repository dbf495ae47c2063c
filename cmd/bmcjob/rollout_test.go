package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/rollout"
)

// testFleet starts a simulated rollout fleet that outlives the commands
// run against it (env.rolloutFleet hands it to "rollout -simulate").
func testFleet(t *testing.T, n int, failing map[int]bool) *rolloutFleet {
	t.Helper()
	f := startRolloutFleet(n, 20*time.Millisecond, failing)
	t.Cleanup(f.close)
	return f
}

// fleetEnv is an env whose "rollout -simulate" uses f, with stdout and
// stderr apart.
func fleetEnv(f *rolloutFleet, stdin string) (*env, *watchBuffer, *lockedBuffer) {
	out, errb := &watchBuffer{}, &lockedBuffer{}
	e := &env{stdout: out, stderr: errb, stdin: strings.NewReader(stdin), interrupts: &interrupts{},
		rolloutFleet: func(n int, _ time.Duration, _ map[int]bool) (*rolloutFleet, func()) {
			if n != len(f.bmcs) {
				panic("test fleet of the wrong size")
			}
			return f, func() {}
		}}
	return e, out, errb
}

// watchBuffer is a lockedBuffer that calls on for every write (a JSON line
// is one write).
type watchBuffer struct {
	lockedBuffer
	mu sync.Mutex
	on func(p []byte)
}

func (w *watchBuffer) Write(p []byte) (int, error) {
	n, err := w.lockedBuffer.Write(p)
	w.mu.Lock()
	on := w.on
	w.mu.Unlock()
	if on != nil {
		on(p)
	}
	return n, err
}

func (w *watchBuffer) watch(on func([]byte)) {
	w.mu.Lock()
	w.on = on
	w.mu.Unlock()
}

// afterN returns a channel closed once n writes contained needle.
func (w *watchBuffer) afterN(needle string, n int) <-chan struct{} {
	ch := make(chan struct{})
	var mu sync.Mutex
	seen := 0
	w.watch(func(p []byte) {
		mu.Lock()
		defer mu.Unlock()
		if bytes.Contains(p, []byte(needle)) {
			seen++
			if seen == n {
				close(ch)
			}
		}
	})
	return ch
}

// The limits hold at the BMCs: from each server's first accepted
// state-changing request to its last, at most -max-unavailable servers
// overlap, at most -per-group per rack; every server is updated once.
// Plain progress (not a terminal) has no escape codes.
func TestRolloutSimulatedLimits(t *testing.T) {
	f := testFleet(t, 24, nil)
	e, out, errb := fleetEnv(f, "")
	err := run(context.Background(), e, []string{"rollout", "-simulate", "24", "-max-unavailable", "5", "-per-group", "rack=3", "-canary", "2"})
	if err != nil {
		t.Fatalf("rollout: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), ": Succeeded (Succeeded)") || !strings.Contains(out.String(), "24 servers: 24 succeeded") {
		t.Errorf("stdout:\n%s", out.String())
	}
	log := f.stateChanges()
	most, perRack := maxOverlap(log, func(i int) string { return f.servers[i].Labels["rack"] })
	t.Logf("most servers changed at once: %d (limit 5); per rack: %v (limit 3); %d state changes", most, perRack, len(log))
	if most > 5 {
		t.Errorf("%d servers were changed at once, -max-unavailable 5", most)
	}
	for rack, n := range perRack {
		if n > 3 {
			t.Errorf("rack %s: %d servers changed at once, -per-group rack=3", rack, n)
		}
	}
	// The canary: the first two servers finished before any other began.
	canaryDone, othersBegan := 0, len(log)+1
	for _, c := range log {
		if c.Index < 2 {
			canaryDone = c.Seq
		} else if c.Seq < othersBegan {
			othersBegan = c.Seq
		}
	}
	if canaryDone > othersBegan {
		t.Errorf("a server beyond the canary changed (seq %d) before the canary's last change (seq %d)", othersBegan, canaryDone)
	}
	for i, b := range f.bmcs {
		if v := b.FirmwareVersion("BIOS"); v != rolloutSimVersion {
			t.Errorf("%s: BIOS %s, want %s", f.servers[i].Name, v, rolloutSimVersion)
		}
		if n := len(b.FirmwareTasks()); n != 1 {
			t.Errorf("%s: %d firmware updates, want 1", f.servers[i].Name, n)
		}
	}
	if s := errb.String(); strings.Contains(s, "\x1b") || strings.Contains(s, "\r") {
		t.Errorf("plain progress has terminal codes:\n%q", s)
	}
	for _, want := range []string{"rollout rollout-", ": started", "canary succeeded", "completed: Succeeded", "failure budget left 0 of 0"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, errb.String())
		}
	}
}

// -json: every stdout line is a JSON object, the events then the result;
// failures spend the budget and the exit is an error naming them.
func TestRolloutJSONAndFailureBudget(t *testing.T) {
	f := testFleet(t, 10, failingServers(10, 20)) // node-010 and node-005 fail
	e, out, errb := fleetEnv(f, "")
	err := run(context.Background(), e, []string{"rollout", "-simulate", "10", "-max-unavailable", "3", "-failure-budget", "1", "-json", "-name", "budget"})
	var re *resultError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "Halted (FailureBudgetSpent)") {
		t.Fatalf("want a Halted result error, got %v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var last jsonLine
	servers, rollouts := 0, 0
	for i, l := range lines {
		var v jsonLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("line %d is not a JSON object: %v\n%s", i+1, err, l)
		}
		switch v.Type {
		case "server":
			servers++
			if v.Server == "" || v.Index == nil || v.To == "" {
				t.Errorf("line %d: a server event without its server: %s", i+1, l)
			}
		case "rollout":
			rollouts++
		case "result":
			if i != len(lines)-1 {
				t.Errorf("line %d: the result is not the last line", i+1)
			}
		default:
			t.Errorf("line %d: type %q", i+1, v.Type)
		}
		last = v
	}
	if last.Type != "result" || last.Result != rollout.ResultHalted || last.Status == nil || last.Status.Counts.Failed != 2 {
		t.Fatalf("last line: %+v", last)
	}
	if servers == 0 || rollouts < 3 { // started, halting, completed
		t.Errorf("%d server and %d rollout events:\n%s", servers, rollouts, out.String())
	}
	for _, name := range []string{"node-005", "node-010"} {
		if !strings.Contains(last.Message, name) || !strings.Contains(errb.String(), name+" failed (job budget.") {
			t.Errorf("the failure of %s is not named:\n%s\n%s", name, last.Message, errb.String())
		}
	}
}

// A crash mid-rollout (the command's context ends: a kill) and the same
// command again: the rollout resumes from -db and succeeds, every server
// updated once.
func TestRolloutResumesAfterCrash(t *testing.T) {
	f := testFleet(t, 8, nil)
	db := filepath.Join(t.TempDir(), "rollouts.db")
	args := []string{"rollout", "-simulate", "8", "-max-unavailable", "2", "-db", db, "-json"}

	e, out, errb := fleetEnv(f, "")
	crashed := out.afterN(`"to":"succeeded"`, 3)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, e, args) }()
	select {
	case <-crashed:
		cancel()
	case err := <-done:
		t.Fatalf("the rollout ended before the crash: %v\n%s", err, errb.String())
	}
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "run the same command to resume") {
		t.Fatalf("after the crash: %v", err)
	}
	if strings.Contains(out.String(), `"type":"result"`) {
		t.Fatalf("the first run completed:\n%s", out.String())
	}

	e, out, errb = fleetEnv(f, "")
	if err := run(context.Background(), e, args); err != nil {
		t.Fatalf("resumed: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "resuming rollout rollout-") || !strings.Contains(out.String(), `"result":"Succeeded"`) {
		t.Errorf("second run:\n%s\n%s", errb.String(), out.String())
	}
	for i, b := range f.bmcs {
		if v, n := b.FirmwareVersion("BIOS"), len(b.FirmwareTasks()); v != rolloutSimVersion || n != 1 {
			t.Errorf("%s: BIOS %s after %d updates, want %s after 1", f.servers[i].Name, v, n, rolloutSimVersion)
		}
	}
	if most, _ := maxOverlap(f.stateChanges(), nil); most > 2 {
		t.Errorf("%d servers changed at once across the crash, limit 2", most)
	}
	// A third run finds it completed and prints its result again.
	e, out, _ = fleetEnv(f, "")
	if err := run(context.Background(), e, args); err != nil || !strings.Contains(out.String(), `"result":"Succeeded"`) {
		t.Errorf("third run: %v\n%s", err, out.String())
	}
}

// The first Ctrl-C aborts: running jobs finish, nothing starts after it,
// the result is Aborted.
func TestRolloutCtrlCAborts(t *testing.T) {
	f := testFleet(t, 10, nil)
	e, out, errb := fleetEnv(f, "")
	started := out.afterN(`"to":"running"`, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), e, []string{"rollout", "-simulate", "10", "-max-unavailable", "2", "-json"})
	}()
	<-started
	if !e.interrupts.take() {
		t.Fatal("the first Ctrl-C was not taken")
	}
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "Aborted") {
		t.Fatalf("want Aborted, got %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "Ctrl-C: aborting the rollout") {
		t.Errorf("stderr:\n%s", errb.String())
	}
	updated := 0
	for _, b := range f.bmcs {
		updated += len(b.FirmwareTasks())
	}
	if updated == 0 || updated == len(f.bmcs) {
		t.Errorf("%d servers updated after an abort at the start, want some, not all", updated)
	}
}

// -canary-approval asks on standard input: y goes on, n aborts, and no
// answer leaves the rollout waiting.
func TestRolloutCanaryApproval(t *testing.T) {
	for _, tc := range []struct{ stdin, want string }{{"maybe\ny\n", ""}, {"n\n", "Aborted"}, {"", "standard input ended"}} {
		f := testFleet(t, 4, nil)
		e, out, errb := fleetEnv(f, tc.stdin)
		err := run(context.Background(), e, []string{"rollout", "-simulate", "4", "-max-unavailable", "2", "-canary", "1", "-canary-approval"})
		switch {
		case tc.want == "" && err != nil, tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("stdin %q: %v, want %q\n%s\n%s", tc.stdin, err, tc.want, out.String(), errb.String())
		}
		if !strings.Contains(errb.String(), "the canary (1 servers) succeeded: go on with the rollout? [y/n]") {
			t.Errorf("stdin %q: not asked:\n%s", tc.stdin, errb.String())
		}
		if tc.want != "" {
			if n := len(f.bmcs[3].FirmwareTasks()); n != 0 {
				t.Errorf("stdin %q: a server beyond the canary was updated", tc.stdin)
			}
		}
	}
}

// A -servers file with -credentials-file, against simulated BMCs as if they
// were real ones: the entries default to each server's bmc address.
func TestRolloutServersFile(t *testing.T) {
	f := testFleet(t, 3, nil)
	dir := t.TempDir()
	var lines []string
	for _, s := range f.servers {
		b, _ := json.Marshal(s)
		lines = append(lines, string(b))
	}
	servers := filepath.Join(dir, "servers.jsonl")
	writeFile(t, servers, "# the fleet\n"+strings.Join(lines, "\n")+"\n")
	template := filepath.Join(dir, "template.json")
	writeFile(t, template, `{"tasks": [{"power": {"op": "cycle"}}]}`) // never in state: every server runs
	creds := filepath.Join(dir, "creds.json")
	store, err := bmc.OpenFileCredentials(creds)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.servers[:2] {
		if err := store.Set(context.Background(), s.BMC, f.creds); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "r.db")
	args := []string{"rollout", "-servers", servers, "-template", template, "-credentials-file", creds, "-db", db, "-max-unavailable", "50%"}
	if _, err := runOut(t, "", args...); err == nil || !strings.Contains(err.Error(), "line 4: bmc (the credentials entry when credentialsRef is empty): no entry") {
		t.Fatalf("a server without credentials: %v", err)
	}
	if err := store.Set(context.Background(), f.servers[2].BMC, f.creds); err != nil {
		t.Fatal(err)
	}
	out, err := runOut(t, "", args...)
	if err != nil || !strings.Contains(out, "3 servers: 3 succeeded") {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	if strings.Contains(out, f.creds.Password) {
		t.Fatalf("the password was printed:\n%s", out)
	}
	// -user and $BMC_PASSWORD for every server, no file.
	out, err = runOut(t, f.creds.Password, "rollout", "-servers", servers, "-template", template, "-user", f.creds.Username, "-db", filepath.Join(dir, "r2.db"))
	if err != nil || !strings.Contains(out, "3 servers: 3 succeeded") {
		t.Fatalf("rollout with -user: %v\n%s", err, out)
	}
	if strings.Contains(out, f.creds.Password) {
		t.Fatalf("the password was printed:\n%s", out)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Bad input is refused before anything runs, naming the flag, the line
// and the field.
func TestRolloutBadInput(t *testing.T) {
	dir := t.TempDir()
	good := `{"name": "a", "bmc": "redfish://10.0.0.1/redfish/v1/Systems/1", "labels": {"rack": "r1"}}`
	tmpl := filepath.Join(dir, "t.json")
	writeFile(t, tmpl, `{"tasks": [{"power": {"op": "cycle"}}]}`)
	for _, tc := range []struct {
		servers, template string
		args              []string
		want              string
	}{
		{servers: good + "\n" + `{"name": "b", "bmc": "ftp://x"}`, want: `line 2: bmc: invalid BMC address: unsupported scheme "ftp"`},
		{servers: good + "\n\n" + `{"name": "b", "bcm": "redfish://10.0.0.2"}`, want: `line 3: unknown field "bcm"`},
		{servers: good + "\n" + `{"name": "b", "bmc": "redfish://10.0.0.2", "labels": {"rack": 2}}`, want: `line 2: field "labels": want a string, got a number`},
		{servers: good + "\n" + `{"name": "a", "bmc": "redfish://10.0.0.2"}`, want: `line 2: name: "a" is the name of line 1 too`},
		{servers: `{"bmc": "redfish://10.0.0.2"}`, want: `line 1: name: required`},
		{servers: `{"name": "b c", "bmc": "redfish://10.0.0.2"}`, want: `line 1: name: "b c": use 1-63 letters`},
		{servers: `{"name": "b"}`, want: `line 1: bmc: required`},
		{servers: `{"name": "b", "bmc": "redfish://10.0.0.2"`, want: `line 1: column 42: the input ends inside a value`},
		{servers: `{"name": "b", "bmc": "redfish://10.0.0.2"} {}`, want: `line 1: more than one JSON value`},
		{servers: "[\n  " + good + ",\n  {\"name\": \"b\", \"bmc\": 7}\n]", want: `servers[1] (line 3): field "bmc": want a string, got a number`},
		{servers: "[\n  " + good + ",\n  {\"name\": \"b\",,}\n]", want: `line 3, column 17: invalid character ','`},
		{servers: "\n# nothing\n", want: `no servers`},
		{servers: good, template: `{"bmc": "redfish://10.0.0.9", "tasks": [{"power": {"op": "on"}}]}`, want: `bmc: a rollout's template names no BMC`},
		{servers: good, template: `{"tasks": [{"power": {"op": "sideways"}}]}`, want: `tasks[0].power.op: "sideways"`},
		{servers: good, args: []string{"-max-unavailable", "0"}, want: `-max-unavailable: 0: at least 1`},
		{servers: good, args: []string{"-max-unavailable", "120%"}, want: `-max-unavailable: "120%" is not a count or a percentage`},
		{servers: good, args: []string{"-per-group", "rack"}, want: `-per-group: "rack": want LABEL=N or LABEL=P%`},
		{servers: good, args: []string{"-failure-budget", "x"}, want: `-failure-budget: "x" is not a count`},
		{servers: good, args: []string{"-name", "a.b"}, want: `-name: invalid name "a.b"`},
		{servers: good, args: []string{"-fail", "3%"}, want: `-fail: only with -simulate`},
		{servers: good, want: `-user is required`},
		{servers: `{"name": "b", "bmc": "redfish://10.0.0.2", "credentialsRef": "x"}`, args: []string{"-user", "admin"}, want: `line 1: credentialsRef: needs -credentials-file`},
	} {
		sp := filepath.Join(dir, "servers.jsonl")
		writeFile(t, sp, tc.servers)
		tp := tmpl
		if tc.template != "" {
			tp = filepath.Join(dir, "t2.json")
			writeFile(t, tp, tc.template)
		}
		args := append([]string{"rollout", "-servers", sp, "-template", tp, "-db", filepath.Join(dir, "x.db")}, tc.args...)
		_, err := runOut(t, "pw", args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: got %v, want %q", tc.servers, tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); err == nil {
		t.Error("a refused rollout created its -db")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout"}, "-servers FILE is required (or -simulate N)"},
		{[]string{"rollout", "-servers", "x"}, "-template FILE is required"},
		{[]string{"rollout", "-simulate", "3", "-servers", "x"}, "not both"},
		{[]string{"rollout", "-simulate", "3", "-fail", "300%"}, `-fail: "300%"`},
	} {
		if _, err := runOut(t, "", tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

// maxOverlap is the most servers being changed at once in log: a server
// counts from its first accepted state-changing request to its last (both
// inside the span the rollout counts it unavailable). group, when not nil,
// maps a server to its group, and the most per group is returned too.
func maxOverlap(log []fleetChange, group func(int) string) (most int, perGroup map[string]int) {
	first, last := map[int]int{}, map[int]int{}
	for _, c := range log {
		if _, ok := first[c.Index]; !ok {
			first[c.Index] = c.Seq
		}
		last[c.Index] = c.Seq
	}
	perGroup = map[string]int{}
	open, openIn := 0, map[string]int{}
	for _, c := range log {
		g := ""
		if group != nil {
			g = group(c.Index)
		}
		if first[c.Index] == c.Seq {
			open++
			openIn[g]++
			most = max(most, open)
			perGroup[g] = max(perGroup[g], openIn[g])
		}
		if last[c.Index] == c.Seq {
			open--
			openIn[g]--
		}
	}
	return most, perGroup
}
