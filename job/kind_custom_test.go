package job_test

// This file adds a task kind from outside package job, as a program
// embedding bmckit does (docs/custom-kinds.md): the kind (assetTagKind,
// below) is this one file, and its registration is one line of the
// configuration, `Kinds: job.Kinds{"example.com/asset-tag": assetTagKind{}}`.
// The tests run it on the Runner and the Stepper and check its failure modes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// assetTagger is a capability some BMC drivers have (an OEM call), which
// bmc.Driver does not name: the kind reaches it by type assertion.
type assetTagger interface {
	SetAssetTag(ctx context.Context, tag string) error
	AssetTag(ctx context.Context) (string, error)
}

// assetTagKind sets the system's asset tag and reads it back.
type assetTagKind struct{}

type assetTagParams struct {
	Tag string `json:"tag"`
}

func (assetTagKind) params(raw json.RawMessage) (assetTagParams, error) {
	var p assetTagParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, &task.FieldError{Msg: err.Error()}
	}
	return p, nil
}

func (k assetTagKind) Validate(raw json.RawMessage) error {
	p, err := k.params(raw)
	switch {
	case err != nil:
		return err
	case p.Tag == "" || len(p.Tag) > 32:
		return &task.FieldError{Path: "tag", Msg: fmt.Sprintf("%q: 1 to 32 characters", p.Tag)}
	}
	return nil
}

func (k assetTagKind) Send(ctx context.Context, t *job.KindTask) error {
	a, ok := t.BMC.(assetTagger)
	if !ok {
		return fmt.Errorf("set the asset tag: %w", bmc.ErrNotSupported)
	}
	p, _ := k.params(t.Params)
	return a.SetAssetTag(ctx, p.Tag)
}

func (k assetTagKind) Check(ctx context.Context, t *job.KindTask) (bool, string, error) {
	a, ok := t.BMC.(assetTagger)
	if !ok {
		return false, "", fmt.Errorf("read the asset tag: %w", bmc.ErrNotSupported)
	}
	p, _ := k.params(t.Params)
	got, err := a.AssetTag(ctx)
	if err != nil {
		return false, "", err
	}
	return got == p.Tag, "asset tag " + got, nil
}

// The rest is the tests' BMC: the fake driver plus the OEM capability.

// tagBMC is the asset tag of one simulated system, with what was asked of it.
type tagBMC struct {
	mu      sync.Mutex
	tag     string
	sets    int
	failSet []error
	// lag is how many reads after a set still return the old tag.
	lag int
}

type taggedDriver struct {
	bmc.Driver
	b *tagBMC
}

func (d taggedDriver) SetAssetTag(_ context.Context, tag string) error {
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	if len(d.b.failSet) > 0 {
		err := d.b.failSet[0]
		d.b.failSet = d.b.failSet[1:]
		return err
	}
	d.b.tag, d.b.sets = tag, d.b.sets+1
	return nil
}

func (d taggedDriver) AssetTag(context.Context) (string, error) {
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	if d.b.lag > 0 {
		d.b.lag--
		return "old", nil
	}
	return d.b.tag, nil
}

func (b *tagBMC) setsSoFar() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sets
}

// tagDialer dials through d and adds the capability.
func tagDialer(d bmc.Dialer, b *tagBMC) bmc.Dialer {
	return bmc.DialerFunc(func(ctx context.Context, ep bmc.Endpoint, c bmc.Credentials) (bmc.Driver, error) {
		drv, err := d.Dial(ctx, ep, c)
		if err != nil {
			return drv, err
		}
		return taggedDriver{drv, b}, nil
	})
}

// tags is newStepEnvDialing's wrap that adds b's capability.
func tags(b *tagBMC) func(bmc.Dialer) bmc.Dialer {
	return func(d bmc.Dialer) bmc.Dialer { return tagDialer(d, b) }
}

var assetTag = job.Kinds{"example.com/asset-tag": assetTagKind{}}

func tagSpec(params string) job.Spec {
	return job.Spec{BMC: "redfish://10.0.0.9/redfish/v1/Systems/1", Tasks: []task.Spec{
		{Custom: &task.CustomAction{Kind: "example.com/asset-tag", Params: task.CustomParams(params)}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
}

func TestCustomKindOnTheRunner(t *testing.T) {
	ctx := t.Context()
	b := &tagBMC{tag: "old", lag: 2}
	st := memstore.New()
	r, err := job.NewRunner(job.Config{Store: st, StepperConfig: job.StepperConfig{
		Dialer: tagDialer(fake.New(fake.Options{Power: bmc.PowerOff}), b),
		Kinds:  assetTag, PollInterval: time.Millisecond,
	}})
	require.NoError(t, err)
	go func() { _ = r.Start(ctx) }()

	_, err = r.Submit(ctx, "tag-1", tagSpec(`{"tag": "rack-7"}`))
	require.NoError(t, err)
	j, err := r.Wait(ctx, "tag-1")
	require.NoError(t, err)
	require.Equal(t, conditions.ResultSucceeded, j.Status.Result, j.Status.Message)
	assert.Equal(t, "asset tag rack-7", j.Status.Tasks[0].Message)
	assert.Equal(t, 1, b.setsSoFar(), "sent once; the lagging read-back was polled, not answered by a second send")
	assert.Equal(t, "custom example.com/asset-tag", j.Spec.Tasks[0].Describe())

	// The stored record is the job's JSON, params included as written
	// (compacted), and reads back into an equal spec.
	kv, err := st.Get(ctx, "bmckit/jobs/tag-1")
	require.NoError(t, err)
	assert.Contains(t, string(kv.Value), `"custom":{"kind":"example.com/asset-tag","params":{"tag":"rack-7"}}`)
	back, err := job.DecodeRecord(kv.Value)
	require.NoError(t, err)
	assert.JSONEq(t, `{"tag":"rack-7"}`, string(back.Spec.Tasks[0].Custom.Params))
}

func TestCustomKindRefusedAtSubmit(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	r, err := job.NewRunner(job.Config{Store: st, StepperConfig: job.StepperConfig{
		Dialer: fake.New(fake.Options{}), Kinds: assetTag,
	}})
	require.NoError(t, err)
	for _, c := range []struct {
		spec job.Spec
		want string
	}{
		{tagSpec(`{"tag": ""}`), `tasks[0].custom.params.tag: "": 1 to 32 characters`},
		{tagSpec(`{"tag": 7}`), `tasks[0].custom.params: json: cannot unmarshal number`},
		{tagSpec(`[1]`), `tasks[0].custom.params: not a JSON object`},
		{job.Spec{BMC: "ipmi://10.0.0.9", Tasks: []task.Spec{{Custom: &task.CustomAction{Kind: "example.com/raid-reset"}}}},
			`tasks[0].custom.kind: "example.com/raid-reset" is not a kind this program registered`},
		{job.Spec{BMC: "ipmi://10.0.0.9", Tasks: []task.Spec{{Custom: &task.CustomAction{Kind: "raid-reset"}}}},
			`tasks[0].custom.kind: "raid-reset" is not a domain-qualified name`},
	} {
		_, err := r.Submit(ctx, "bad", c.spec)
		require.ErrorIs(t, err, job.ErrInvalidSpec)
		assert.Contains(t, err.Error(), c.want)
		_, err = st.Get(ctx, "bmckit/jobs/bad")
		assert.ErrorIs(t, err, storage.ErrNotFound, "nothing is stored for a refused spec")
	}
	// Spec.Validate has no configuration: it checks the shape only.
	s := tagSpec(`{"tag": ""}`)
	assert.NoError(t, s.Validate())

	for name, want := range map[string]string{"asset-tag": "not a domain-qualified name", "Example.com/x": "not a domain-qualified name"} {
		_, err := job.NewStepper(job.StepperConfig{Dialer: fake.New(fake.Options{}), Locks: syslock.NoLocking, Kinds: job.Kinds{name: assetTagKind{}}})
		assert.ErrorContains(t, err, want, name)
	}
	_, err = job.NewStepper(job.StepperConfig{Dialer: fake.New(fake.Options{}), Locks: syslock.NoLocking, Kinds: job.Kinds{"example.com/x": nil}})
	assert.ErrorContains(t, err, `"example.com/x" is nil`)
}

func tagJob(params string) *job.Job {
	return &job.Job{Name: "tag", Generation: 1, Spec: tagSpec(params)}
}

// A controller's object was not submitted through a Runner: the Stepper
// checks the kind at the job's start, and fails the job without a BMC call.
func TestCustomKindUnregisteredFailsOnTheStepper(t *testing.T) {
	var dials atomic.Int32
	counting := func(d bmc.Dialer) bmc.Dialer {
		return bmc.DialerFunc(func(ctx context.Context, ep bmc.Endpoint, c bmc.Credentials) (bmc.Driver, error) {
			dials.Add(1)
			return d.Dial(ctx, ep, c)
		})
	}
	e := newStepEnvDialing(t, fake.Options{}, job.StepperConfig{}, counting)
	j, _ := e.reconcile(t, tagJob(`{"tag":"a"}`), 1000)
	assert.Equal(t, conditions.ResultFailed, j.Status.Result)
	assert.Equal(t, conditions.ReasonInvalidSpec, j.Status.Reason)
	assert.Contains(t, j.Status.Message, `tasks[0].custom.kind: "example.com/asset-tag" is not a kind this program registered`)
	assert.Zero(t, dials.Load())
}

// A crash after the tag was set, before the result was stored: the resumed
// task reads the tag first and does not set it again.
func TestCustomKindResumedChecksBeforeSending(t *testing.T) {
	for _, landed := range []bool{true, false} {
		t.Run(fmt.Sprintf("landed=%t", landed), func(t *testing.T) {
			b := &tagBMC{tag: "old"}
			if !landed {
				b.failSet = []error{bmc.Transient(errors.New("connection reset"))}
			}
			cfg := job.StepperConfig{Kinds: assetTag}
			e1 := newStepEnvDialing(t, fake.Options{Power: bmc.PowerOff}, cfg, tags(b))
			crash := errors.New("crash")
			writes := 0
			persist := func(ctx context.Context, j *job.Job) error {
				if writes++; writes > 1 {
					return crash // the process dies after storing the intent
				}
				require.Equal(t, task.PhaseStarted, j.Status.Tasks[0].Phase)
				return e1.crd.persist(ctx, j)
			}
			j := tagJob(`{"tag":"rack-7"}`)
			for range 1000 {
				res, err := e1.stepper.Step(t.Context(), j, persist)
				if errors.Is(err, crash) {
					break
				}
				require.NoError(t, err)
				e1.clk.Advance(res.RequeueAfter)
			}
			require.Equal(t, 1, e1.crd.writes)

			// Another process resumes the job as stored.
			e2 := newStepEnvDialing(t, fake.Options{Power: bmc.PowerOff}, cfg, tags(b))
			resumed, _ := e2.reconcile(t, e1.crd.load(t), 1000)
			require.Equal(t, conditions.ResultSucceeded, resumed.Status.Result, resumed.Status.Message)
			assert.Equal(t, 1, b.setsSoFar(), "the tag is set exactly once")
		})
	}
}

type failingKind struct{ err error }

func (failingKind) Validate(json.RawMessage) error                             { return nil }
func (k failingKind) Send(context.Context, *job.KindTask) error                { return k.err }
func (failingKind) Check(context.Context, *job.KindTask) (bool, string, error) { return false, "", nil }

func TestCustomKindFailures(t *testing.T) {
	for _, c := range []struct {
		name   string
		kinds  job.Kinds
		plain  bool
		reason string
		msg    string
	}{
		{"driver without the capability", assetTag, true, conditions.ReasonNotSupported, "set the asset tag"},
		{"Fail with the kind's reason", job.Kinds{"example.com/asset-tag": failingKind{job.Fail("TagLocked", "the tag is locked by the vendor")}},
			false, "TagLocked", "the tag is locked by the vendor"},
		{"a permanent error", job.Kinds{"example.com/asset-tag": failingKind{errors.New("refused")}}, false, conditions.ReasonBMCError, "refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wrap := tags(&tagBMC{})
			if c.plain {
				wrap = nil
			}
			e := newStepEnvDialing(t, fake.Options{}, job.StepperConfig{Kinds: c.kinds}, wrap)
			j, _ := e.reconcile(t, tagJob(`{"tag":"a"}`), 1000)
			assert.Equal(t, conditions.ResultFailed, j.Status.Result)
			assert.Equal(t, c.reason, j.Status.Tasks[0].Reason)
			assert.Contains(t, j.Status.Tasks[0].Message, c.msg)
			assert.Equal(t, conditions.ReasonSkipped, j.Status.Tasks[1].Reason, "the power task after it is skipped")
		})
	}
}

// forceOffKind sends a power off through the job's connection: what a
// vendor's OEM "hard stop" kind does.
type forceOffKind struct{}

func (forceOffKind) Validate(json.RawMessage) error { return nil }
func (forceOffKind) Send(ctx context.Context, t *job.KindTask) error {
	return t.BMC.SetPower(ctx, bmc.PowerActionOff)
}
func (forceOffKind) Check(ctx context.Context, t *job.KindTask) (bool, string, error) {
	st, err := t.BMC.PowerState(ctx)
	return st == bmc.PowerOff, "power " + string(st), err
}

// A custom kind's requests through KindTask.BMC are fenced as the built-in
// kinds' are: a step paused until its lock lapsed sends nothing when it
// resumes, and the next step sends the action once.
func TestCustomKindFencedAfterAPause(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	b := fake.New(fake.Options{Power: bmc.PowerOn, Clock: clk})
	entered, resume := holdFirst(b, fake.MethodSetPower)
	s, err := job.NewStepper(job.StepperConfig{Dialer: b, Clock: clk, Kinds: job.Kinds{"example.com/force-off": forceOffKind{}},
		Locks: syslock.NewStoreLocker(memstore.New(), syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: clk})})
	require.NoError(t, err)
	defer s.Close(ctx)
	j := &job.Job{Name: "off", Generation: 1, Spec: job.Spec{BMC: "ipmi://10.0.0.9", Tasks: []task.Spec{
		{Custom: &task.CustomAction{Kind: "example.com/force-off"}}}}}
	var stored []byte
	persist := func(_ context.Context, j *job.Job) error {
		var err error
		stored, err = json.Marshal(j)
		return err
	}

	out := make(chan error, 1)
	go func() {
		_, err := s.Step(ctx, j, persist)
		out <- err
	}()
	<-entered
	clk.Advance(time.Minute) // the pause outlasts the lock's validity
	close(resume)
	require.ErrorIs(t, <-out, bmc.ErrFenced)
	assert.Equal(t, bmc.PowerOn, b.State().Power, "the fenced request took no effect")

	var resumed job.Job
	require.NoError(t, json.Unmarshal(stored, &resumed))
	assert.Equal(t, task.PhaseStarted, resumed.Status.Tasks[0].Phase, "resumable: not sent, not failed")
	for n := 0; n < 50 && !resumed.Completed(); n++ {
		res, err := s.Step(ctx, &resumed, persist)
		require.NoError(t, err)
		clk.Advance(res.RequeueAfter)
	}
	require.Equal(t, conditions.ResultSucceeded, resumed.Status.Result, resumed.Status.Message)
	assert.Equal(t, 1, applied(b, fake.MethodSetPower), "the power off went out once, under the renewed lock")
}
