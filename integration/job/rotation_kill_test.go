//go:build linux

package job_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
	"github.com/bmckit/bmckit/task"
)

// TestRotationSIGKILL is issue 39's "no lock-out under kills": a
// rotateCredentials job (password mode and account mode) on a redfishtest
// BMC that locks an account after 5 failed logins, run by a Runner child
// over a boltstore file and a bmc.FileCredentials file, is SIGKILLed at
// one of these points, then a fresh child resumes it to its end:
//
//   - before-pending: SetPending called, the file not written yet;
//   - after-pending: SetPending returned (the pending set is durable);
//   - answer-held: the BMC applied the change (password PATCH or account
//     POST) and holds its answer until the child is dead;
//   - after-answer: the change's answer reached the child's transport;
//   - after-proof: a session logged in with the pending credentials read
//     the accounts (the proof), before the promotion;
//   - after-promotion: Promote returned;
//   - random: 0-120 ms after the child's runner started (the rotation
//     takes about 90 ms).
//
// The child-side points are held in the child (it prints "hold <step>" and
// blocks; the parent kills it on that line); answer-held is held in the
// BMC's OnStateChange hook in this process. The BMC and a monitor.Monitor
// (reading every 100 ms with the same credentials file, logging in at every
// read: its pool closes sessions after 1 ms idle) live in this
// process and outlive the kills. Each run then checks: the job Succeeded;
// the BMC takes the file's current credentials and nothing is pending; at
// most one account besides the current one, and when there is one the
// job's message names it; no account was ever locked (the simulator's
// Lockouts counter, which an unlock does not reset); the monitor's
// Contactable is True; and neither the old password nor any password the
// file held (current or pending, read after the kill and at the end)
// appears in the boltstore file's bytes, any line the children printed
// (their log at V(10), observer events, errors), the monitor's log lines
// at V(10) or its machine record. At the kill itself, the BMC takes the
// file's current or pending credentials.
//
// Runs per mode and point: 2 by default (CI), 24 with
// BMCKIT_ROTKILL_RUNS=24 (docs/benchmarks.md, issue 39).
func TestRotationSIGKILL(t *testing.T) {
	if childtest.IsChild("rot-kill-runner") {
		rotKillRunnerChild()
		return
	}
	if testing.Short() {
		t.Skip("SIGKILLs rotation runners; takes a minute")
	}
	runs := 2
	if s := os.Getenv(envRotKillRuns); s != "" {
		var err error
		if runs, err = strconv.Atoi(s); err != nil || runs < 1 {
			t.Fatalf("%s=%q: want a positive number", envRotKillRuns, s)
		}
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv(envKillSeed); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envKillSeed, s, err)
		}
	}
	t.Logf("seed %d (%s repeats the random kills), %d runs per mode and kill point", seed, envKillSeed, runs)
	rng := mrand.New(mrand.NewPCG(uint64(seed), 39)) //nolint:gosec // test randomness
	var summaries []string
	for _, mode := range []task.RotationMode{task.RotationPassword, task.RotationAccount} {
		for _, point := range rotKillPoints {
			name := string(mode) + "/" + point
			ok := t.Run(name, func(t *testing.T) {
				var sum rotKillSummary
				for i := range runs {
					sum.add(rotKillOnce(t, mode, point, rng, i))
					if t.Failed() {
						break
					}
				}
				summaries = append(summaries, fmt.Sprintf("rotation SIGKILL %s: %s", name, sum))
			})
			if !ok {
				break
			}
		}
	}
	for _, s := range summaries {
		t.Log(s)
		fmt.Println(s)
	}
}

const (
	envRotKillRuns = "BMCKIT_ROTKILL_RUNS" // runs per mode and kill point (default 2)
	rotAnswerHeld  = "answer-held"
	rotRandom      = "random"
)

var rotKillPoints = []string{rotBeforePending, rotAfterPending, rotAnswerHeld, rotAfterAnswer, rotAfterProof, rotAfterPromotion, rotRandom}

// rotKillResult is what one run saw.
type rotKillResult struct {
	killed     bool // the kill landed before the job finished
	succeeded  bool // the job Succeeded
	accepted   bool // the BMC takes the file's current credentials at the end
	lockouts   int  // lock-outs of any account
	leaks      int  // (password, place) pairs found
	extra      int  // accounts left besides the current one
	fallbacks  int  // the children's dials that fell back to the pending credentials (log lines)
	monReads   int  // requests the monitor sent to the BMC
	monLogins  int  // the monitor's logins
	monRefused int  // the monitor's logins the BMC refused (401)
	took       time.Duration
}

type rotKillSummary struct {
	runs, killed, succeeded, accepted, lockouts, leaks, extra, fallbacks, monReads, monLogins, monRefused int
	took                                                                                                  time.Duration
}

func (s *rotKillSummary) add(r rotKillResult) {
	s.runs++
	s.took += r.took
	s.fallbacks += r.fallbacks
	s.monReads += r.monReads
	s.monRefused += r.monRefused
	s.monLogins += r.monLogins
	s.extra += r.extra
	s.lockouts += r.lockouts
	s.leaks += r.leaks
	for _, c := range []struct {
		ok bool
		n  *int
	}{{r.killed, &s.killed}, {r.succeeded, &s.succeeded}, {r.accepted, &s.accepted}} {
		if c.ok {
			*c.n++
		}
	}
}

func (s rotKillSummary) String() string {
	return fmt.Sprintf("%d runs (%d killed before the end): %d Succeeded, %d with the file's current credentials accepted by the BMC, %d lock-outs, %d passwords found, %d extra accounts left; job dials that fell back to the pending credentials: %d; monitor requests %d, logins %d, of them refused %d; %s",
		s.runs, s.killed, s.succeeded, s.accepted, s.lockouts, s.leaks, s.extra, s.fallbacks, s.monReads, s.monLogins, s.monRefused, s.took.Round(100*time.Millisecond))
}

// rotLog collects log lines (funcr) for the password scan.
type rotLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *rotLog) logger() funcr.Options { return funcr.Options{Verbosity: 10} }

func (l *rotLog) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

func (l *rotLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// rotHeldAnswer holds the BMC's answer to the change when armed.
type rotHeldAnswer struct {
	mu    sync.Mutex
	armed bool
	fired chan string
	hold  chan struct{}
}

func (h *rotHeldAnswer) onChange(c redfishtest.StateChange) {
	if c.What != "account changed" && c.What != "account created" {
		return
	}
	h.mu.Lock()
	if !h.armed {
		h.mu.Unlock()
		return
	}
	h.armed = false
	hold := h.hold
	h.mu.Unlock()
	h.fired <- c.What
	<-hold
}

func rotSecret(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "Old-pw-" + hex.EncodeToString(b)
}

// rotKillOnce runs one rotation, killed at point, resumed, and checked.
func rotKillOnce(t *testing.T, mode task.RotationMode, point string, rng *mrand.Rand, run int) rotKillResult {
	began := time.Now()
	ctx := context.Background()
	dir := t.TempDir()
	db, credsPath := filepath.Join(dir, "jobs.db"), filepath.Join(dir, "credentials.json")
	oldPW := rotSecret(t)
	held := &rotHeldAnswer{fired: make(chan string, 1), hold: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held.hold) }) }
	defer release()
	srv := redfishtest.NewServer(redfishtest.Config{
		Username: "admin", Password: oldPW,
		Accounts:      redfishtest.AccountsConfig{LockoutThreshold: 5},
		OnStateChange: held.onChange,
	})
	defer srv.Close()
	addr := srv.Address("1")

	fc, err := bmc.OpenFileCredentials(credsPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.Set(ctx, rotKillRef, bmc.Credentials{Username: "admin", Password: oldPW}); err != nil {
		t.Fatal(err)
	}
	passwords := map[string]bool{oldPW: true}
	notePasswords := func() {
		if cur, err := fc.Resolve(ctx, rotKillRef); err == nil {
			passwords[cur.Password] = true
		}
		if pend, ok, err := fc.Pending(ctx, rotKillRef); err == nil && ok {
			passwords[pend.Password] = true
		}
	}

	// The monitor, with the same credentials file, reads the BMC every
	// 100 ms through the whole run.
	monLog := &rotLog{}
	monLogger := funcr.New(monLog.add, monLog.logger())
	var monReads, monLogins, monRefused atomic.Int64 // the monitor's requests, logins, refused logins
	monStore := memstore.New()
	// A pool whose sessions close after 1 ms idle: the monitor logs in
	// at every read, as against a BMC that ends sessions when a password
	// changes, so its reads during the rotation try the credentials the
	// BMC may refuse.
	monPool := connpool.New(redfish.NewDialer(redfish.Options{Logger: monLogger, WrapTransport: func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			monReads.Add(1)
			resp, err := next.RoundTrip(req)
			if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/Sessions") {
				monLogins.Add(1)
				if err == nil && resp.StatusCode == http.StatusUnauthorized {
					monRefused.Add(1)
				}
			}
			return resp, err
		})
	}}), time.Millisecond, nil)
	defer func() { _ = monPool.Close(ctx) }()
	mon, err := monitor.New(monitor.Config{
		Store: monStore, Credentials: fc, Pool: monPool,
		Interval: 100 * time.Millisecond, CredentialsCheckInterval: 100 * time.Millisecond, ScanInterval: 100 * time.Millisecond,
		HealthEvery: -1, InventoryInterval: -1, Logger: monLogger, Owner: "rot-kill-monitor",
	})
	if err != nil {
		t.Fatal(err)
	}
	monCtx, monCancel := context.WithCancel(ctx)
	monDone := make(chan error, 1)
	go func() { monDone <- mon.Start(monCtx) }()
	stopMonitor := func() {
		monCancel()
		if err := <-monDone; err != nil {
			t.Errorf("monitor: %v", err)
		}
	}
	defer func() {
		if monCtx.Err() == nil {
			stopMonitor()
		}
	}()
	if _, err := mon.Add(ctx, addr, rotKillRef); err != nil {
		t.Fatal(err)
	}

	env := []string{envKillDB + "=" + db, envRotKillCreds + "=" + credsPath, envRotKillBMC + "=" + addr, envRotKillMode + "=" + string(mode)}
	var childLines []string
	first := slices.Clone(env)
	switch point {
	case rotAnswerHeld:
		held.mu.Lock()
		held.armed = true
		held.mu.Unlock()
	case rotRandom:
	default:
		first = append(first, envRotKillHold+"="+point)
	}
	rc := &runnerChild{c: childtest.Start(t, "TestRotationSIGKILL", "rot-kill-runner", first...), phase: "starting"}
	// A random kill lands 0-120 ms after the runner started (the whole
	// rotation takes about 90 ms here).
	var timer <-chan time.Time
	randomDelay := time.Duration(rng.Int64N(int64(120 * time.Millisecond)))
	deadline := time.NewTimer(time.Minute)
	what := ""
	for what == "" && !rc.allDone {
		select {
		case l, ok := <-rc.c.Lines():
			if !ok {
				t.Fatalf("run %d: the runner child exited before it was killed:\n%s", run, rc.tail())
			}
			rc.take(l)
			childLines = append(childLines, l)
			if l == "started" && point == rotRandom {
				timer = time.After(randomDelay)
			}
			if strings.HasPrefix(l, "hold ") {
				what = l
			}
			if strings.HasPrefix(l, "error ") {
				t.Fatalf("run %d: runner child: %s", run, l)
			}
		case w := <-held.fired:
			what = "answer held: " + w
		case <-timer:
			what = fmt.Sprintf("random: %v after the runner started", randomDelay.Round(time.Millisecond))
		case <-deadline.C:
			t.Fatalf("run %d: the runner child neither reached %s nor finished within a minute:\n%s", run, point, rc.tail())
		}
	}
	deadline.Stop()
	killed := what != ""
	if killed {
		for _, l := range rc.c.Kill() {
			childLines = append(childLines, l)
		}
	} else if rest, err := rc.c.Wait(); err != nil {
		t.Fatalf("run %d: runner child failed after ALL DONE: %v\n%s", run, err, rc.tail())
	} else {
		childLines = append(childLines, rest...)
	}
	release() // a held answer goes to the dead child
	if point != rotRandom && !killed {
		t.Fatalf("run %d: the child finished without reaching kill point %s:\n%s", run, point, strings.Join(childLines, "\n"))
	}
	// At the kill: the BMC takes the file's current or pending credentials.
	notePasswords()
	cur, err := fc.Resolve(ctx, rotKillRef)
	if err != nil {
		t.Fatal(err)
	}
	pend, hasPend, err := fc.Pending(ctx, rotKillRef)
	if err != nil {
		t.Fatal(err)
	}
	if !srv.AccountPasswordIs(cur.Username, cur.Password) && !(hasPend && srv.AccountPasswordIs(pend.Username, pend.Password)) {
		t.Errorf("run %d, killed at %q: the BMC takes neither the current (user %q) nor the pending (user %q, present %v) credentials",
			run, what, cur.Username, pend.Username, hasPend)
	}

	// A fresh child resumes the job to its end.
	if killed {
		rc = &runnerChild{c: childtest.Start(t, "TestRotationSIGKILL", "rot-kill-runner", env...), phase: "starting"}
		deadline = time.NewTimer(time.Minute)
		for !rc.allDone {
			select {
			case l, ok := <-rc.c.Lines():
				if !ok {
					t.Fatalf("run %d: the resuming child exited before the job was done:\n%s", run, rc.tail())
				}
				rc.take(l)
				childLines = append(childLines, l)
			case <-deadline.C:
				t.Fatalf("run %d: the resuming child did not finish within a minute:\n%s", run, rc.tail())
			}
		}
		deadline.Stop()
		rest, err := rc.c.Wait()
		childLines = append(childLines, rest...)
		if err != nil {
			t.Fatalf("run %d: the resuming child failed: %v\n%s", run, err, rc.tail())
		}
	}
	// One more monitor read with the final credentials, then stop it.
	mon.CredentialsChanged(rotKillRef)
	stopMonitor()
	notePasswords()

	// The job as stored.
	store, err := boltstore.Open(db, boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: &bmc.SchemeDialer{}}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := reader.Get(ctx, rotKillJob)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	jobJSON, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	res := rotKillResult{killed: killed, succeeded: j.Completed() && j.Status.Result == conditions.ResultSucceeded}
	if !res.succeeded {
		t.Errorf("run %d (killed at %q): job ended %s %s %q, want Succeeded", run, what, j.Status.Result, j.Status.Reason, j.Status.Message)
	}

	// The BMC takes the file's current credentials; nothing is pending.
	cur, err = fc.Resolve(ctx, rotKillRef)
	if err != nil {
		t.Fatal(err)
	}
	if _, has, _ := fc.Pending(ctx, rotKillRef); has {
		t.Errorf("run %d: pending credentials left in the file", run)
	}
	if cur.Password == oldPW {
		t.Errorf("run %d: the current password is still the old one", run)
	}
	if mode == task.RotationAccount && cur.Username == "admin" {
		t.Errorf("run %d: account mode left the job logging in as admin", run)
	}
	ok, err := bmc.Accepts(ctx, redfish.NewDialer(redfish.Options{}), mustEndpoint(t, addr), cur)
	res.accepted = ok && err == nil && srv.AccountPasswordIs(cur.Username, cur.Password)
	if !res.accepted {
		t.Errorf("run %d (killed at %q): the BMC refuses the file's current credentials (user %q): %v", run, what, cur.Username, err)
	}
	extra := 0
	for _, a := range srv.Accounts() {
		if a.UserName == "" || a.UserName == cur.Username {
			continue
		}
		extra++
		// Named in the job's result: its message, a task's message, or
		// the task's rotation status (user names, never passwords).
		named := strings.Contains(j.Status.Message, strconv.Quote(a.UserName))
		for _, ts := range j.Status.Tasks {
			named = named || strings.Contains(ts.Message, strconv.Quote(a.UserName)) ||
				ts.Rotation != nil && (ts.Rotation.UserName == a.UserName || ts.Rotation.OldUserName == a.UserName)
		}
		if !named {
			t.Errorf("run %d: account %q left on the BMC, not named in the job's result %q", run, a.UserName, j.Status.Message)
		}
	}
	if extra > 1 {
		t.Errorf("run %d: %d accounts left besides %q, want at most 1: %+v", run, extra, cur.Username, srv.Accounts())
	}
	for _, a := range srv.Accounts() {
		res.lockouts += a.Lockouts
		if a.Lockouts > 0 || a.Locked {
			t.Errorf("run %d (killed at %q): account %q was locked %d times (locked now: %v)", run, what, a.UserName, a.Lockouts, a.Locked)
		}
	}
	mc, err := mon.Get(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if c := conditions.Get(mc.Status.Conditions, monitor.TypeContactable); c == nil || c.Status != conditions.True {
		t.Errorf("run %d: the monitor's Contactable at the end: %+v", run, c)
	}
	monJSON, err := json.Marshal(mc)
	if err != nil {
		t.Fatal(err)
	}

	// No password anywhere.
	dbBytes, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	places := map[string]string{
		"the boltstore file": string(dbBytes),
		"the job record":     string(jobJSON),
		"the runner children's output (log, events, errors)": strings.Join(childLines, "\n"),
		"the monitor's log":    monLog.text(),
		"the monitor's record": string(monJSON),
	}
	for pw := range passwords {
		for where, text := range places {
			if strings.Contains(text, pw) {
				res.leaks++
				t.Errorf("run %d: a password (%d chars) found in %s", run, len(pw), where)
			}
		}
	}
	res.monReads, res.monLogins, res.monRefused = int(monReads.Load()), int(monLogins.Load()), int(monRefused.Load())
	res.extra, res.fallbacks, res.took = extra, strings.Count(strings.Join(childLines, "\n"), "rotation in progress"), time.Since(began)
	return res
}

func mustEndpoint(t *testing.T, addr string) bmc.Endpoint {
	ep, err := bmc.ParseEndpoint(addr)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}
