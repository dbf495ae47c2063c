package job

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// TestDecodeFieldsKnown fails when a field of a struct decodeJob or
// decodeJobHead fill by hand changed: until they learn it, every record
// takes go-json's path. (A field added to a struct of codecFields fails
// TestCodecFieldsKnown, which turns the fast decoder off as well.)
func TestDecodeFieldsKnown(t *testing.T) {
	if err := decodeFieldsKnown(); err != nil {
		t.Fatal(err)
	}
	if !fastDecode {
		t.Fatal("fastDecode is false")
	}
}

// checkDecode decodes data both ways. It returns whether the fast path
// accepted it and fails the test when it accepted what go-json refuses or
// decoded it differently.
func checkDecode(t *testing.T, data []byte) bool {
	t.Helper()
	var fast, slow Job
	if decodeJob(data, &fast) != nil {
		return false
	}
	if err := gojson.Unmarshal(data, &slow); err != nil {
		t.Fatalf("fast path accepted a record go-json refuses (%v):\n%q", err, data)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast path decoded differently:\n%q\n fast %#v\n slow %#v", data, fast, slow)
	}
	return true
}

// fullJob is a wait-for-boot job with every field set: spec actions of
// every kind, boot tries and a boot restore record.
func fullJob() *Job {
	at := func(s int) *timestamp.Time { return timestamp.Ptr(t0dec.Add(time.Duration(s) * time.Second)) }
	yes := true
	cond := func(typ, st string, s int) conditions.Condition {
		return conditions.Condition{Type: typ, Status: conditions.Status(st), ObservedGeneration: 2,
			LastTransitionTime: *at(s), Reason: "Succeeded", Message: `power is "On" <ok> & done`}
	}
	return &Job{
		Name: "boot-1", Generation: 2, CreatedAt: t0dec, CancelRequested: true,
		Spec: Spec{
			BMC: "redfish://10.0.0.5/redfish/v1/Systems/1", CredentialsRef: "bmc-1",
			SystemUUID: "4c4c4544-0042-3510-8052-b4c04f565432", Timeout: task.Duration{Duration: 30 * time.Minute},
			Tasks: []task.Spec{
				{Name: "off", Power: &task.PowerAction{Op: task.PowerOff}, Timeout: task.Duration{Duration: time.Minute}},
				{PowerStatus: &task.PowerStatusAction{}},
				{Reachable: &task.ReachableAction{}},
				{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, Persistent: false, Mode: task.BootModeUEFI,
					URI: "https://boot.example/ipxe.efi?a=1&b=2", EmulateOnce: &yes}},
				{VirtualMedia: &task.VirtualMediaAction{Kind: task.MediaUSB, ImageURL: "http://img.example/x.iso"}},
				{VirtualMedia: &task.VirtualMediaAction{Eject: true}},
				{BMCReset: &task.BMCResetAction{Type: task.BMCResetWarm}},
				{WaitForBoot: &task.WaitForBootAction{SystemUUID: "4c4c4544-0042-3510-8052-b4c04f565432",
					WaitForBootPolicy: task.WaitForBootPolicy{Mode: task.BootAllOf, Signals: []string{"ipxe", "ignition"},
						Deadlines:      []task.SignalDeadline{{Signal: "ipxe", Within: task.Duration{Duration: 5 * time.Minute}, From: task.DeadlineFromAttemptStart}},
						AllowedSources: []string{"10.0.0.0/8"}, Retries: 2, RetryBackoff: task.Duration{Duration: 30 * time.Second}}}},
				{Power: &task.PowerAction{Op: task.PowerOn}},
			},
		},
		Status: Status{
			ObservedGeneration: 2,
			Conditions:         []conditions.Condition{cond("Completed", "True", 9), cond("Running", "False", 9)},
			Result:             conditions.ResultFailed, Reason: "TimedOut", Message: "task 8 (wait for boot): timed out\n",
			CurrentTask: 7,
			Tasks: []task.Status{
				{Conditions: []conditions.Condition{cond("Completed", "True", 3)}, Phase: task.PhaseDone,
					Result: conditions.ResultSucceeded, Reason: "Succeeded", Message: "power is Off", Attempts: 2,
					StartTime: at(1), RequestTime: at(2), CompletionTime: at(3), NextAttemptTime: at(4),
					LastError: "connection refused", PowerState: "Off"},
				{Phase: task.PhaseDone, Result: conditions.ResultSucceeded,
					BootRestore: &task.BootRestore{Emulated: true, Previous: task.BootOverride{Device: "disk", Persistent: true,
						Mode: "UEFI", URI: "http://x/é"}, State: task.BootRestorePending, Attempts: 1, Message: "will put back"}},
				{Phase: task.PhaseStarted, LastResetBefore: timestamp.Ptr(time.Date(2026, 11, 30, 23, 59, 58, 500000000, time.FixedZone("", 2*3600))), BootTries: []task.BootTry{
					{Try: 1, AttemptID: "boot-1.1.2.7", Step: task.BootTryDone, Result: "TimedOut", Stage: "IPXETimeout",
						Message: "no ipxe", StartTime: at(5), EndTime: at(6)},
					{Try: 2, AttemptID: "boot-1.1.2.7", Step: task.BootTryWaiting, NotBefore: at(7), StartTime: at(8),
						OverrideTime: at(8), PowerCycleTime: at(8)},
				}},
			},
			StartTime: at(1), CompletionTime: at(9),
			Wire: &bmc.Stats{Requests: 42, Connections: 1, Logins: 1, Throttled: 2, ThrottleWait: 150 * time.Millisecond},
		},
	}
}

// fixtureJob is codecFixture decoded (codecFixtureJob for any testing.TB).
func fixtureJob(tb testing.TB) *Job {
	var j Job
	if err := json.Unmarshal([]byte(codecFixture), &j); err != nil {
		tb.Fatal(err)
	}
	return &j
}

var t0dec = time.Date(2026, 12, 1, 5, 0, 0, 123456789, time.UTC)

// stateRecords runs real jobs through a Stepper on fake BMCs and returns
// every record it writes, by name: queued, running, succeeded, failed,
// canceled, plus the every-field wait-for-boot job.
func stateRecords(t testing.TB) map[string][]byte {
	recs := map[string][]byte{}
	for name, j := range stateJobs(t) {
		b, err := marshalRecord(j)
		if err != nil {
			t.Fatal(err)
		}
		recs[name] = b
	}
	return recs
}

// stateJobs is the jobs stateRecords encodes, as they were in memory when
// written.
func stateJobs(t testing.TB) map[string]*Job {
	recs := map[string]*Job{}
	add := func(name string, j *Job) {
		cp := *j
		cp.Spec, cp.Status = *j.Spec.DeepCopy(), *j.Status.DeepCopy()
		recs[name] = &cp
	}
	run := func(prefix string, opts fake.Options, j *Job) {
		clk := clock.NewFake(t0dec)
		opts.Clock = clk
		s, err := NewStepper(StepperConfig{Locks: NoLocking, Dialer: fake.New(opts), Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close(context.Background()) }()
		add(prefix+" queued", j)
		writes := 0
		persist := func(_ context.Context, j *Job) error {
			writes++
			add(prefix+" write "+string(rune('a'+writes)), j)
			return nil
		}
		for range 100 {
			res, err := s.Step(context.Background(), j, persist)
			if err != nil {
				t.Fatal(err)
			}
			if res.Done {
				add(prefix+" "+string(j.Status.Result), j)
				return
			}
			clk.Advance(max(res.RequeueAfter, time.Second))
		}
		t.Fatalf("%s: not done after 100 steps", prefix)
	}
	spec := Spec{BMC: "redfish://10.0.0.5/redfish/v1/Systems/1", Timeout: task.Duration{Duration: time.Hour}, Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
		{VirtualMedia: &task.VirtualMediaAction{ImageURL: "http://img.example/boot.iso"}},
		{Name: "on", Power: &task.PowerAction{Op: task.PowerOn}, Timeout: task.Duration{Duration: 5 * time.Minute}},
	}}
	run("netboot", fake.Options{Power: bmc.PowerOn}, &Job{Name: "ok", Generation: 1, CreatedAt: t0dec, Spec: spec})
	run("unauthorized", fake.Options{Power: bmc.PowerOn, Username: "u", Password: "p"},
		&Job{Name: "bad", CreatedAt: t0dec, Spec: spec})
	run("canceled", fake.Options{Power: bmc.PowerOn}, &Job{Name: "c", CreatedAt: t0dec, CancelRequested: true, Spec: spec})
	add("waitForBoot, boot tries, boot restore", fullJob())
	if _, ok := recs["netboot "+string(conditions.ResultSucceeded)]; !ok {
		t.Fatalf("the netboot job did not succeed: %v", keys(recs))
	}
	if _, ok := recs["unauthorized "+string(conditions.ResultFailed)]; !ok {
		t.Fatalf("the unauthorized job did not fail: %v", keys(recs))
	}
	if _, ok := recs["canceled "+string(conditions.ResultCanceled)]; !ok {
		t.Fatalf("the canceled job was not canceled: %v", keys(recs))
	}
	return recs
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestRecordDecodeStates: the records of real job states take the fast path
// and decode as go-json decodes them.
func TestRecordDecodeStates(t *testing.T) {
	recs := stateRecords(t)
	fixture, err := marshalRecord(fixtureJob(t))
	if err != nil {
		t.Fatal(err)
	}
	recs["fixture"] = fixture
	for name, data := range recs {
		if !checkDecode(t, data) {
			t.Errorf("%s: the fast path declined:\n%s", name, data)
		}
		// Through unmarshalRecord, as the Runner calls it.
		var a, b Job
		if err := unmarshalRecord(data, &a); err != nil {
			t.Fatal(err)
		}
		if err := gojson.Unmarshal(data, &b); err != nil {
			t.Fatal(err)
		}
		restoreTaskConditions(&b.Status)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: unmarshalRecord differs from go-json (and the task conditions it restores)", name)
		}
		// And back: the decoded job encodes to the same record.
		again, err := marshalRecord(&a)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Errorf("%s: re-encoded differently:\n%s\n%s", name, again, data)
		}
	}
	if len(recs) < 12 {
		t.Errorf("only %d records", len(recs))
	}
}

// TestRecordDecodeFallback: unmarshalRecord decodes what the fast path
// declines with go-json, and a destination that is not zero is merged into
// by go-json as before.
func TestRecordDecodeFallback(t *testing.T) {
	for _, in := range []string{
		`{"name":"x","extra":1}`, `{"name":"x","name":"y"}`, `{"name":null}`, `{"Name":"x"}`,
		`{"name":"x","generation":1.0}`, `{"name":"x","status":{"currentTask":1e2}}`,
		`{"name":"bad \ud800 surrogate"}`, "{\"name\":\"bad \xff utf8\"}",
	} {
		if decodeJob([]byte(in), new(Job)) == nil {
			t.Errorf("fast path accepted %s", in)
		}
		var a, b Job
		errA, errB := unmarshalRecord([]byte(in), &a), gojson.Unmarshal([]byte(in), &b)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: unmarshalRecord %v %+v, go-json %v %+v", in, errA, a, errB, b)
		}
	}
	j := Job{Name: "kept", Generation: 7}
	if err := unmarshalRecord([]byte(`{"name":"new"}`), &j); err != nil {
		t.Fatal(err)
	}
	if j.Name != "new" || j.Generation != 7 {
		t.Fatalf("merge into a non-zero job: %+v", j)
	}
	h := jobHead{CancelRequested: true}
	if err := unmarshalRecord([]byte(`{"spec":{"bmc":"b"}}`), &h); err != nil {
		t.Fatal(err)
	}
	if !h.CancelRequested || h.Spec.BMC != "b" {
		t.Fatalf("jobHead: %+v", h)
	}
}

// decodeSeeds are hand-mutated records: other key orders, white space,
// escapes, and everything the fast path declines.
var decodeSeeds = []string{
	`{}`, ` { } `, `{"name":""}`, `{"status":{"currentTask":0},"spec":{"tasks":[],"bmc":"b"},"name":"n"}`,
	`{"name":"a\"b\\c\/d\b\f\n\r\t\u00e9\u2028\ud83d\ude00"}`, `{"name":"é"}`, `{"name":"\ud800"}`, `{"name":"\udc00\ud800"}`,
	`{"name":"x","generation":-0}`, `{"generation":01}`, `{"generation":9223372036854775807}`,
	`{"generation":9223372036854775808}`, `{"generation":-9223372036854775808}`, `{"generation":1e3}`,
	`{"createdAt":"2026-12-01T05:00:00+01:00"}`, `{"createdAt":"2026-12-01T05:00:00.5-07:30"}`,
	`{"createdAt":"2026-12-01T05:00:00Z","createdAt":"2026-12-01T05:00:00Z"}`, `{"createdAt":null}`,
	`{"createdAt":"2026-12-01T05:00:00\u005a"}`, `{"createdAt":"2026-12-01 05:00:00Z"}`,
	`{"cancelRequested":true}`, `{"cancelRequested":false}`, `{"cancelRequested":1}`, `{"CancelRequested":true}`,
	`{"spec":{"timeout":"1h2m"}}`, `{"spec":{"timeout":"1.5s"}}`, `{"spec":{"timeout":90}}`, `{"spec":{"timeout":"x"}}`,
	`{"spec":{"tasks":[{"power":{"op":"on"}},{"powerStatus":{}},{"reachable":{"x":1}}]}}`,
	`{"spec":{"tasks":[{"bootDevice":{"device":"pxe","emulateOnce":false,"persistent":true}}]}}`,
	`{"spec":{"tasks":[{"waitForBoot":{"signals":["a"],"retries":2,"retryBackoff":"5s"}}]}}`,
	`{"spec":{"tasks":[{"waitForBoot":{"signals":["a"],"retries":2,"retryBackoff":"5s"},"power":{"op":"on"}}]}}`,
	`{"spec":{"bmc":"b","tasks":[{"power":{"op":"on","op":"off"}}]}}`,
	`{"status":{"tasks":[{},{"phase":"Done"}],"wire":{"requests":1}}}`,
	`{"status":{"tasks":[{"bootTries":[{"try":1,"attemptID":"a","step":"Done"}]}]}}`,
	`{"status":{"tasks":[{"bootTries":[]}]}}`, `{"status":{"tasks":[{"bootTries":null}]}}`,
	`{"status":{"conditions":[{"type":"Completed","status":"True","lastTransitionTime":"2026-12-01T05:00:00Z"}]}}`,
	`{"status":{"conditions":[{"type":"Completed","Status":"True"}]}}`, `{"status":{"conditions":[{}]},"x":[1,{"a":"b"},true]}`,
	`{"status":{"startTime":"2026-12-01T05:00:00Z","extra":{"a":[1,2,-3]}},"spec":{"bmc":"b","tasks":[{"y":1}]}}`,
	`{"name":"\u00G9"}`, `{"name":"\u00e"}`, `{"name":"\x"}`, `{"name":"\'}`, `{"name":"a\"}`, `{"name":"\ud83d\u0041"}`,
	`{"name":"\ud83d\ude0"}`, "{\"name\":\"ctl \x01\"}", "{\"name\":\"del \x7f\"}",
	`{"name":"x"} `, `{"name":"x"}x`, `{"name":"x",}`, `{,"name":"x"}`, `[]`, `null`, ``,
}

// FuzzRecordDecode is the fast decoder's guard: for any input it accepts,
// go-json accepts it too and decodes the same value. Seeded with the records the encoder writes for jobs with every
// field set (TestCodecMatchesGoJSON's random jobs, the benchmark fixture,
// real job states) and hand-mutated ones.
//
//	GOWORK=off go test -run '^$' -fuzz FuzzRecordDecode -fuzztime 60s ./job
func FuzzRecordDecode(f *testing.F) {
	for _, b := range stateRecords(f) {
		f.Add(b)
	}
	fixture, err := marshalRecord(fixtureJob(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	f.Add([]byte(codecFixture))
	r := rand.New(rand.NewSource(3))
	for i := range 40 {
		var j Job
		fillRandom(r, reflect.ValueOf(&j).Elem(), float64(i%5)/5, 0)
		b, err := marshalRecord(&j)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		checkRecordRoundTrip(t, data)
	})
}

// checkRecordRoundTrip: a record DecodeRecord accepts encodes (leaving out
// what it may) to a record that decodes to the same job: leaving task
// conditions out and restoring them loses nothing, whatever the record
// held.
func checkRecordRoundTrip(t *testing.T, data []byte) {
	t.Helper()
	j, err := DecodeRecord(data)
	if err != nil {
		return
	}
	again, err := marshalRecord(j)
	if err != nil {
		return // a time go-json refuses to encode
	}
	back, err := DecodeRecord(again)
	if err != nil {
		t.Fatalf("re-encoded record does not decode (%v):\n%s\nfrom\n%q", err, again, data)
	}
	// Compare as the full encoding: decoded strings of invalid UTF-8 and
	// times in other zones compare by their text.
	a, err1 := marshalFull(j)
	b, err2 := marshalFull(back)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Fatalf("round trip changed the job:\n %s\n %s\nfrom\n%q", a, b, data)
	}
}

// TestRecordDecodeRandom: the records of random jobs with every field set
// or left zero (the jobs TestCodecMatchesGoJSON encodes) decode as go-json
// decodes them, and the fast path accepts those whose strings are valid
// UTF-8.
func TestRecordDecodeRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	accepted := 0
	for i := range 400 {
		var j Job
		fillRandom(r, reflect.ValueOf(&j).Elem(), float64(i%5)/5, 0)
		b, err := marshalRecord(&j)
		if err != nil {
			t.Fatal(err)
		}
		if checkDecode(t, b) {
			accepted++
		}
	}
	if accepted < 100 {
		t.Errorf("the fast path accepted only %d of 400 random records", accepted)
	}
	for _, s := range decodeSeeds {
		checkDecode(t, []byte(s))
	}
}

// BenchmarkCodecUnmarshalFast decodes the fixture record (a finished
// three-task netboot job) with the hand-written decoder, as unmarshalRecord
// does.
func BenchmarkCodecUnmarshalFast(b *testing.B) {
	data, err := marshalRecord(fixtureJob(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var j Job
		if !decodeFast(data, &j) {
			b.Fatal("declined")
		}
	}
}

// BenchmarkCodecUnmarshalGoJSON decodes the fixture record with go-json,
// as unmarshalRecord did before the fast path.
func BenchmarkCodecUnmarshalGoJSON(b *testing.B) {
	data, err := marshalRecord(fixtureJob(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var j Job
		if err := gojson.Unmarshal(data, &j); err != nil {
			b.Fatal(err)
		}
	}
}
