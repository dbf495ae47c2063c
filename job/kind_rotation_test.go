package job_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

const rotRef = "bmc-1"

var rotOld = bmc.Credentials{Username: "admin", Password: "Old-pw-4c9e#7a1"}

func rotate(mode task.RotationMode) task.Spec {
	return task.Spec{RotateCredentials: &task.RotateCredentialsAction{Mode: mode}}
}

// crashPoint stops the "process" after its n-th effect: a BMC request, a
// write of the job, a write to the credentials store. After it, every
// effect fails and nothing more lands, as when the process dies there.
type crashPoint struct {
	mu      sync.Mutex
	n, seen int
	crashed bool
	off     bool // the test itself is looking: nothing counts
}

var errDied = errors.New("the process died here")

// effect counts one effect that is about to land: an error when the
// process died before it.
func (c *crashPoint) effect() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off {
		return nil
	}
	if c.crashed {
		return errDied
	}
	c.seen++
	if c.n > 0 && c.seen == c.n {
		c.crashed = true // this one lands; nothing after it
	}
	return nil
}

func (c *crashPoint) set(f func()) { c.mu.Lock(); defer c.mu.Unlock(); f() }

// crashingStore is a CredentialsStore whose writes are effects; it records
// every password it was given, to look for them where they must not be.
type crashingStore struct {
	*bmc.MemoryCredentials
	cp        *crashPoint
	mu        sync.Mutex
	passwords []string
}

func (s *crashingStore) SetPending(ctx context.Context, ref string, c bmc.Credentials) error {
	if err := s.cp.effect(); err != nil {
		return err
	}
	s.mu.Lock()
	s.passwords = append(s.passwords, c.Password)
	s.mu.Unlock()
	return s.MemoryCredentials.SetPending(ctx, ref, c)
}

func (s *crashingStore) Promote(ctx context.Context, ref string, c bmc.Credentials) error {
	if err := s.cp.effect(); err != nil {
		return err
	}
	return s.MemoryCredentials.Promote(ctx, ref, c)
}

func (s *crashingStore) DropPending(ctx context.Context, ref string, c bmc.Credentials) error {
	if err := s.cp.effect(); err != nil {
		return err
	}
	return s.MemoryCredentials.DropPending(ctx, ref, c)
}

func (s *crashingStore) secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{rotOld.Password}, s.passwords...)
}

// rotationEnv is one BMC, one job store (the host's object), one
// credentials store, and what every process wrote to logs and events.
type rotationEnv struct {
	clk   *clock.Fake
	bmc   *fake.BMC
	creds *crashingStore
	crd   *crd
	cp    *crashPoint
	out   bytes.Buffer // logs and events of every process
	outMu sync.Mutex
}

func newRotationEnv(t *testing.T, opts fake.Options) *rotationEnv {
	e := &rotationEnv{clk: clock.NewFake(t0), crd: &crd{}, cp: &crashPoint{}}
	opts.Clock, opts.Power = e.clk, bmc.PowerOn
	opts.Username, opts.Password = rotOld.Username, rotOld.Password
	e.bmc = fake.New(opts)
	e.bmc.SetHook(fake.MethodAny, func(context.Context, fake.Call) error { return e.cp.effect() })
	e.creds = &crashingStore{MemoryCredentials: bmc.NewMemoryCredentials(map[string]bmc.Credentials{rotRef: rotOld}), cp: e.cp}
	return e
}

func (e *rotationEnv) write(s string) {
	e.outMu.Lock()
	defer e.outMu.Unlock()
	e.out.WriteString(s + "\n")
}

// process is a new Stepper: a process started on the same stores and BMC.
func (e *rotationEnv) process(t *testing.T) *job.Stepper {
	return e.processDialing(t, e.bmc)
}

func (e *rotationEnv) processDialing(t *testing.T, d bmc.Dialer) *job.Stepper {
	ev := func(x any) { e.write(fmt.Sprintf("%+v", x)) }
	s, err := job.NewStepper(job.StepperConfig{
		Dialer: d, Credentials: e.creds, Locks: syslock.NoLocking, Clock: e.clk,
		Logger: funcr.New(func(prefix, args string) { e.write(prefix + " " + args) }, funcr.Options{Verbosity: 9}),
		Observer: observe.Observer{
			JobStarted: func(x observe.JobEvent) { ev(x) }, JobFinished: func(x observe.JobEvent) { ev(x) },
			TaskStarted: func(x observe.TaskEvent) { ev(x) }, TaskFinished: func(x observe.TaskEvent) { ev(x) },
			BMCError: func(x observe.BMCErrorEvent) { ev(x) },
		},
	})
	require.NoError(t, err)
	return s
}

// persist is the job store's write: an effect.
func (e *rotationEnv) persist(ctx context.Context, j *job.Job) error {
	if err := e.cp.effect(); err != nil {
		return err
	}
	return e.crd.persist(ctx, j)
}

// run steps the stored job with s until it completes or the process dies.
func (e *rotationEnv) run(t *testing.T, s *job.Stepper) (done bool) {
	for range 100 {
		res, err := s.Step(context.Background(), e.crd.load(t), e.persist)
		if e.cp.crashed {
			return false
		}
		require.NoError(t, err)
		if res.Done {
			return true
		}
		e.clk.Advance(res.RequeueAfter)
	}
	t.Fatalf("job not done after 100 steps: %s", e.crd.stored)
	return false
}

// accepts reports whether the BMC takes c (asked through the fake's test
// hook: no login, no call logged).
func (e *rotationEnv) accepts(c bmc.Credentials) bool {
	return e.bmc.AccountPassword(c.Username, c.Password)
}

func (e *rotationEnv) users() []string {
	var names []string
	for _, a := range e.bmc.Accounts() {
		names = append(names, a.UserName)
	}
	return names
}

func (e *rotationEnv) current(t *testing.T) bmc.Credentials {
	c, err := e.creds.Resolve(context.Background(), rotRef)
	require.NoError(t, err)
	return c
}

func (e *rotationEnv) pending(t *testing.T) (bmc.Credentials, bool) {
	c, has, err := e.creds.Pending(context.Background(), rotRef)
	require.NoError(t, err)
	return c, has
}

// noSecrets checks that no password the rotation knew is in the job
// record, the logs or the events.
func (e *rotationEnv) noSecrets(t *testing.T) {
	e.outMu.Lock()
	out := e.out.String()
	e.outMu.Unlock()
	for _, pw := range e.creds.secrets() {
		require.NotContains(t, string(e.crd.stored), pw, "a password in the job record")
		require.NotContains(t, out, pw, "a password in a log line or an event")
	}
}

func rotationJob(mode task.RotationMode) *job.Job {
	j := newJob(rotate(mode))
	j.Spec.CredentialsRef = rotRef
	return j
}

// TestRotationCrashPoints stops a rotation after each of its effects in
// turn (every BMC request, every write of the job, every write to the
// credentials store), then resumes it with a new process: at every
// stopping point the BMC takes the store's current or pending credentials,
// and after the resume the rotation is complete, with no password left
// anywhere it must not be. The BMC locks an account after 2 failed logins
// in a row: neither the rotation nor its resume may cost two.
func TestRotationCrashPoints(t *testing.T) {
	for _, mode := range []task.RotationMode{task.RotationPassword, task.RotationAccount} {
		t.Run(string(mode), func(t *testing.T) {
			points := 0
			for n := 1; ; n++ {
				e := newRotationEnv(t, fake.Options{Accounts: fake.AccountOptions{Policy: bmc.PasswordPolicy{MinLength: 12, MaxLength: 20, LockoutThreshold: 2}}})
				require.NoError(t, e.crd.persist(context.Background(), rotationJob(mode)))
				e.cp.set(func() { e.cp.n = n })
				if e.run(t, e.process(t)) {
					points = n - 1
					e.check(t, mode, fmt.Sprintf("no crash (n=%d)", n))
					break
				}
				e.cp.set(func() { e.cp.off = true })
				cur, pend := e.current(t), bmc.Credentials{}
				if p, has := e.pending(t); has {
					pend = p
				}
				require.True(t, e.accepts(cur) || (pend != bmc.Credentials{} && e.accepts(pend)),
					"crash after effect %d: the BMC takes neither the current credentials nor the pending ones", n)
				e.cp.set(func() { e.cp.n, e.cp.seen, e.cp.crashed, e.cp.off = 0, 0, false, false })
				require.True(t, e.run(t, e.process(t)), "resumed after effect %d", n)
				e.check(t, mode, fmt.Sprintf("crash after effect %d", n))
			}
			t.Logf("%s: %d crash points, each resumed to success", mode, points)
			assert.Greater(t, points, 8)
		})
	}
}

// check is the end state of a completed rotation.
func (e *rotationEnv) check(t *testing.T, mode task.RotationMode, what string) {
	t.Helper()
	e.cp.set(func() { e.cp.off = true })
	j := e.crd.load(t)
	assertCompleted(t, j, conditions.ResultSucceeded)
	cur := e.current(t)
	_, has := e.pending(t)
	require.False(t, has, "%s: pending credentials left", what)
	require.NotEqual(t, rotOld.Password, cur.Password, "%s", what)
	require.True(t, e.accepts(cur), "%s: the BMC refuses the store's current credentials", what)
	require.False(t, e.accepts(rotOld), "%s: the old credentials still work", what)
	if mode == task.RotationAccount {
		assert.Equal(t, []string{"admin-2"}, e.users(), "%s: the old account is gone", what)
		assert.Equal(t, "admin-2", cur.Username)
	} else {
		assert.Equal(t, "admin", cur.Username)
	}
	for _, a := range e.bmc.Accounts() {
		assert.False(t, a.Locked, "%s: account %q locked out", what, a.UserName)
	}
	st := j.Status.Tasks[0].Rotation
	require.NotNil(t, st)
	assert.Equal(t, task.RotationDone, st.Stage)
	e.noSecrets(t)
}

// A BMC that refuses the new password (its policy): the task fails, the
// pending credentials are dropped, the current ones still work.
func TestRotationRefusedByPolicyChangesNothing(t *testing.T) {
	e := newRotationEnv(t, fake.Options{})
	e.bmc.FailNext(fake.MethodUpdateAccount, 1, bmc.Permanent(errors.New("the password does not meet the complexity rules")))
	require.NoError(t, e.crd.persist(context.Background(), rotationJob(task.RotationPassword)))
	require.True(t, e.run(t, e.process(t)))
	j := e.crd.load(t)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Contains(t, j.Status.Message, "complexity rules")
	_, has := e.pending(t)
	assert.False(t, has, "pending dropped")
	assert.Equal(t, rotOld, e.current(t))
	assert.True(t, e.accepts(rotOld))
	e.noSecrets(t)
}

// A BMC that takes neither the current nor the pending credentials (its
// password was changed by hand while the rotation was stopped): the task
// fails Unauthorized and sends no change.
func TestRotationBothRefusedChangesNothing(t *testing.T) {
	e := newRotationEnv(t, fake.Options{})
	require.NoError(t, e.crd.persist(context.Background(), rotationJob(task.RotationPassword)))
	// The process dies as it sends the change: ChangeSent is stored, the
	// change did not land.
	e.bmc.SetHook(fake.MethodUpdateAccount, func(context.Context, fake.Call) error {
		e.cp.set(func() { e.cp.crashed = true })
		return errDied
	})
	require.False(t, e.run(t, e.process(t)))
	require.Equal(t, task.RotationChangeSent, e.crd.load(t).Status.Tasks[0].Rotation.Stage)
	e.bmc.SetHook(fake.MethodUpdateAccount, nil)
	e.cp.set(func() { e.cp.n, e.cp.seen, e.cp.crashed, e.cp.off = 0, 0, false, false })

	d, err := e.bmc.Dial(context.Background(), bmc.Endpoint{}, rotOld)
	require.NoError(t, err)
	byHand := "By-hand-9k2#xq"
	require.NoError(t, d.(bmc.AccountManager).UpdateAccount(context.Background(), "1", bmc.AccountUpdate{Password: &byHand}))
	require.NoError(t, d.Close(context.Background()))
	e.bmc.ResetCalls()

	require.True(t, e.run(t, e.process(t)))
	j := e.crd.load(t)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonUnauthorized, j.Status.Reason)
	assert.Empty(t, e.bmc.CallsTo(fake.MethodUpdateAccount), "no change sent")
	assert.True(t, e.bmc.AccountPassword("admin", byHand), "the BMC keeps the password set by hand")
	_, has := e.pending(t)
	assert.True(t, has, "the pending credentials are left for an operator")
	assert.Equal(t, rotOld, e.current(t))
	assert.LessOrEqual(t, e.bmc.Sessions().FailedLogins, 2, "one refused login per credentials")
	e.noSecrets(t)
}

// A BMC that takes the new account but refuses its logins, while the old
// one still works: the task fails VerificationFailed and drops the pending
// credentials; the job's credentials are unchanged.
func TestRotationNewCredentialsRefusedAfterTheChange(t *testing.T) {
	e := newRotationEnv(t, fake.Options{})
	refusing := bmc.DialerFunc(func(ctx context.Context, ep bmc.Endpoint, c bmc.Credentials) (bmc.Driver, error) {
		if c.Username == "admin-2" {
			return nil, fmt.Errorf("login refused: %w", bmc.ErrUnauthorized)
		}
		return e.bmc.Dial(ctx, ep, c)
	})
	require.NoError(t, e.crd.persist(context.Background(), rotationJob(task.RotationAccount)))
	require.True(t, e.run(t, e.processDialing(t, refusing)))
	j := e.crd.load(t)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonVerificationFailed, j.Status.Reason)
	assert.Contains(t, j.Status.Message, `account "admin-2" may be left on the BMC`)
	_, has := e.pending(t)
	assert.False(t, has, "pending dropped")
	assert.Equal(t, rotOld, e.current(t))
	assert.True(t, e.accepts(rotOld))
	e.noSecrets(t)
}

// Without account management, or with a resolver that cannot hold pending
// credentials, the job ends in its preflight: NotSupported, nothing sent.
func TestRotationPreflightNotSupported(t *testing.T) {
	for name, tc := range map[string]struct {
		opts  fake.Options
		creds bmc.CredentialsResolver
		want  string
	}{
		"no accounts": {fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityAccounts}}, nil, "password policy"},
		"no store":    {fake.Options{}, bmc.StaticCredentials{rotRef: rotOld}, "bmc.CredentialsStore"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newRotationEnv(t, tc.opts)
			creds := tc.creds
			if creds == nil {
				creds = e.creds
			}
			s, err := job.NewStepper(job.StepperConfig{Dialer: e.bmc, Credentials: creds, Locks: syslock.NoLocking, Clock: e.clk})
			require.NoError(t, err)
			require.NoError(t, e.crd.persist(context.Background(), rotationJob(task.RotationPassword)))
			for range 10 {
				res, err := s.Step(context.Background(), e.crd.load(t), e.persist)
				require.NoError(t, err)
				if res.Done {
					break
				}
				e.clk.Advance(res.RequeueAfter)
			}
			j := e.crd.load(t)
			assertCompleted(t, j, conditions.ResultFailed)
			assert.Equal(t, conditions.ReasonNotSupported, j.Status.Reason)
			assert.Contains(t, j.Status.Message, tc.want)
			for _, c := range e.bmc.Calls() {
				assert.Contains(t, []fake.Method{fake.MethodDial, fake.MethodPasswordPolicy, fake.MethodClose}, c.Method, "only reads")
			}
			_, has := e.pending(t)
			assert.False(t, has)
		})
	}
}
