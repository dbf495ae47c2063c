//go:build linux

package job_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/task"
)

// The child side of TestRotationSIGKILL: one runner incarnation over a
// boltstore file and a bmc.FileCredentials file, running one
// rotateCredentials job. Everything it says goes to its stdout, which the
// parent keeps whole and scans for passwords: the runner's log at V(10),
// every observer event (BMC errors included), and its own errors.

const (
	envRotKillCreds = "BMCKIT_ROTKILL_CREDS" // the FileCredentials file
	envRotKillBMC   = "BMCKIT_ROTKILL_BMC"   // the job's BMC address
	envRotKillMode  = "BMCKIT_ROTKILL_MODE"  // task.RotationPassword or task.RotationAccount
	envRotKillHold  = "BMCKIT_ROTKILL_HOLD"  // the step at which the child stops, prints "hold <step>" and waits to be killed
	rotKillRef      = "bmc-1"
	rotKillJob      = "rotate"
)

// Steps the child stops at (envRotKillHold); the parent aims the other
// kill points from the BMC's side.
const (
	rotBeforePending  = "before-pending"  // SetPending about to write the file
	rotAfterPending   = "after-pending"   // SetPending returned: the pending set is durable
	rotAfterAnswer    = "after-answer"    // the BMC's answer to the change (PATCH or POST) arrived
	rotAfterProof     = "after-proof"     // a session logged in with the pending credentials read the accounts
	rotAfterPromotion = "after-promotion" // Promote returned
)

// rotHold stops the child at its step, once: it prints "hold <step>" and
// blocks forever (the parent kills it there).
type rotHold struct {
	step string
	once sync.Once
}

func (h *rotHold) at(step string) {
	if h.step != step {
		return
	}
	held := false
	h.once.Do(func() { held = true })
	if held {
		fmt.Printf("hold %s\n", step)
		select {} // killed here
	}
}

// holdingStore is the file store with the child's hold points around its
// writes; it also remembers the pending credentials, so the transport can
// tell a proof login from the others.
type holdingStore struct {
	*bmc.FileCredentials
	hold     *rotHold
	pending  atomic.Pointer[bmc.Credentials]
	promoted atomic.Bool
}

var _ bmc.CredentialsStore = (*holdingStore)(nil)

func (s *holdingStore) SetPending(ctx context.Context, ref string, c bmc.Credentials) error {
	s.hold.at(rotBeforePending)
	if err := s.FileCredentials.SetPending(ctx, ref, c); err != nil {
		return err
	}
	s.pending.Store(&c)
	s.hold.at(rotAfterPending)
	return nil
}

func (s *holdingStore) Pending(ctx context.Context, ref string) (bmc.Credentials, bool, error) {
	c, ok, err := s.FileCredentials.Pending(ctx, ref)
	if ok && err == nil {
		s.pending.Store(&c)
	}
	return c, ok, err
}

func (s *holdingStore) Promote(ctx context.Context, ref string, c bmc.Credentials) error {
	if err := s.FileCredentials.Promote(ctx, ref, c); err != nil {
		return err
	}
	s.promoted.Store(true)
	s.hold.at(rotAfterPromotion)
	return nil
}

// rotHoldTransport holds the child after the change's answer arrived, and
// after a session of the pending credentials (the proof, before the
// promotion) read the accounts. The driver wraps each session's transport
// separately (redfish.Options.WrapTransport), so one rotHoldTransport is
// one session: a login body naming the pending credentials marks it. It
// reads login bodies and never prints them.
type rotHoldTransport struct {
	next    http.RoundTripper
	store   *holdingStore
	pending atomic.Bool // this session logged in with the pending credentials
}

func (t *rotHoldTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := req.URL.Path
	login := req.Method == http.MethodPost && strings.HasSuffix(p, "/SessionService/Sessions")
	pendingLogin := false
	if login && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var l struct{ UserName, Password string }
		if pend := t.store.pending.Load(); pend != nil && json.Unmarshal(body, &l) == nil && l.UserName == pend.Username && l.Password == pend.Password {
			pendingLogin = true
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	change := strings.Contains(p, "/AccountService/Accounts") &&
		(req.Method == http.MethodPatch || req.Method == http.MethodPost)
	switch {
	case pendingLogin && resp.StatusCode/100 == 2:
		t.pending.Store(true)
	case change:
		t.store.hold.at(rotAfterAnswer)
	case req.Method == http.MethodGet && strings.HasSuffix(p, "/AccountService/Accounts") && resp.StatusCode == http.StatusOK &&
		t.pending.Load() && !t.store.promoted.Load():
		t.store.hold.at(rotAfterProof)
	}
	return resp, nil
}

// rotKillRunnerChild is one runner incarnation: it submits the rotation
// job if it is not stored yet, runs it to its end and prints "ALL DONE".
func rotKillRunnerChild() {
	fail := func(format string, args ...any) {
		fmt.Printf("error "+format+"\n", args...)
		os.Exit(1)
	}
	time.AfterFunc(2*time.Minute, func() { fail("runner child gave up after 2m") })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fc, err := bmc.OpenFileCredentials(os.Getenv(envRotKillCreds))
	if err != nil {
		fail("credentials file: %v", err)
	}
	creds := &holdingStore{FileCredentials: fc, hold: &rotHold{step: os.Getenv(envRotKillHold)}}
	store, err := boltstore.Open(os.Getenv(envKillDB), boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fail("open store: %v", err)
	}
	fmt.Println("open")
	var printMu sync.Mutex
	say := func(prefix string, v any) {
		printMu.Lock()
		defer printMu.Unlock()
		fmt.Printf("%s %+v\n", prefix, v)
	}
	logger := funcr.New(func(prefix, args string) { say("log", prefix+" "+args) }, funcr.Options{Verbosity: 10})
	dialer := &bmc.SchemeDialer{}
	dialer.Register("redfish", redfish.NewDialer(redfish.Options{
		Logger: logger,
		WrapTransport: func(next http.RoundTripper) http.RoundTripper {
			return &rotHoldTransport{next: callTagger{next}, store: creds}
		},
	}))
	r, err := job.NewRunner(job.Config{
		Store: store,
		StepperConfig: job.StepperConfig{
			Dialer: dialer, Credentials: creds, Logger: logger,
			PollInterval: 20 * time.Millisecond,
			Observer: observe.Observer{
				JobStarted:   func(e observe.JobEvent) { say("event job-started", e) },
				JobFinished:  func(e observe.JobEvent) { say("event job-finished", e) },
				TaskStarted:  func(e observe.TaskEvent) { say("event task-started", e) },
				TaskFinished: func(e observe.TaskEvent) { say("event task-finished", e) },
				BMCError:     func(e observe.BMCErrorEvent) { say("event bmc-error", e) },
			},
		},
		Owner:         "rot-kill-runner", // the restarted runner is the same runner
		LeaseDuration: 2 * time.Second, ScanInterval: 50 * time.Millisecond,
	})
	if err != nil {
		fail("new runner: %v", err)
	}
	spec := job.Spec{BMC: os.Getenv(envRotKillBMC), CredentialsRef: rotKillRef, Tasks: []task.Spec{{
		RotateCredentials: &task.RotateCredentialsAction{Mode: task.RotationMode(os.Getenv(envRotKillMode))},
	}}}
	if _, err := r.Submit(ctx, rotKillJob, spec); err != nil && !errors.Is(err, storage.ErrExists) {
		fail("submit: %v", err)
	}
	fmt.Println("submitted")
	runChildUntilDone(ctx, cancel, r, store, 1, fail)
}
