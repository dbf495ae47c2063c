package job

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// TestStoredRecordIsEncodingJSON: a stored record is json.Marshal of the
// job, byte for byte: for every state a Stepper writes, a job with every
// field set, random jobs (strings with every escaping rule, times in other
// zones), and the records a real Runner left in its Store.
func TestStoredRecordIsEncodingJSON(t *testing.T) {
	check := func(name string, v any) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalRecord(v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: marshalRecord\n %s (%v)\nwant json.Marshal\n %s", name, got, err, want)
		}
		if err := encodePooled(v, func(b []byte) error {
			if !bytes.Equal(b, want) {
				t.Fatalf("%s: encodePooled\n %s\nwant json.Marshal\n %s", name, b, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for name, j := range stateJobs(t) {
		check(name, j)
	}
	r := rand.New(rand.NewSource(1))
	for i := range 300 {
		var j Job
		fillRandom(r, reflect.ValueOf(&j).Elem(), float64(i%5)/5, 0)
		check("random job", &j)
		var l syslock.Record
		fillRandom(r, reflect.ValueOf(&l).Elem(), float64(i%5)/5, 0)
		check("random lock", l)
	}

	// The records a Runner stored, read back raw.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := fake.NewFleet()
	store := memstore.New()
	runner, err := NewRunner(Config{Store: store, StepperConfig: StepperConfig{Dialer: fleet}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- runner.Start(ctx) }()
	names := []string{"a", "b", "c"}
	for i, name := range names {
		url := "redfish://10.0.7." + string(rune('1'+i)) + "/redfish/v1/Systems/1"
		if _, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOn}); err != nil {
			t.Fatal(err)
		}
		if _, err := runner.Submit(ctx, name, Spec{BMC: url, Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		j, err := runner.Wait(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %s: %s %s", name, j.Status.Result, j.Status.Message)
		}
		rec, err := store.Get(ctx, "bmckit/jobs/"+name)
		if err != nil {
			t.Fatal(err)
		}
		var viaStd Job
		if err := json.Unmarshal(rec.Value, &viaStd); err != nil {
			t.Fatal(err)
		}
		if len(viaStd.Status.Tasks) != 3 || len(viaStd.Status.Tasks[2].Conditions) != 2 {
			t.Fatalf("job %s: task conditions missing from the stored record:\n%s", name, rec.Value)
		}
		again, _ := json.Marshal(&viaStd)
		if !bytes.Equal(again, rec.Value) {
			t.Fatalf("job %s: the stored record is not json.Marshal of the job it holds:\n %s\n %s", name, rec.Value, again)
		}
	}
	cancel()
	<-done
}

// TestLegacyRecordsLoad: records the hand codec wrote before records were
// plain JSON (testdata/records-v0, task conditions left out) decode to
// exactly the jobs they encoded, conditions restored.
func TestLegacyRecordsLoad(t *testing.T) {
	files, err := filepath.Glob("testdata/records-v0/*.want.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("only %d fixtures", len(files))
	}
	restored := 0
	for _, wantFile := range files {
		recFile := strings.TrimSuffix(wantFile, ".want.json") + ".json"
		rec, err := os.ReadFile(recFile)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(wantFile)
		if err != nil {
			t.Fatal(err)
		}
		j, err := DecodeRecord(rec)
		if err != nil {
			t.Fatalf("%s: %v", recFile, err)
		}
		got, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, bytes.TrimSpace(want)) {
			t.Errorf("%s decodes to\n %s\nwant\n %s", recFile, got, want)
		}
		if !bytes.Equal(bytes.TrimSpace(rec), bytes.TrimSpace(want)) {
			restored++
		}
	}
	if restored < 10 {
		t.Errorf("only %d fixtures had conditions left out: not the old format", restored)
	}
}

// FuzzRecord: the Runner's encoder (go-json) writes exactly json.Marshal's
// bytes and its decoder reads them exactly as encoding/json does, for any
// strings in a job with every field set; and a record DecodeRecord accepts,
// whatever it holds, re-encodes to a fixed point.
//
//	GOWORK=off go test -run '^$' -fuzz FuzzRecord -fuzztime 60s ./job
func FuzzRecord(f *testing.F) {
	for _, s := range codecStrings {
		f.Add(s, s, []byte(codecFixture))
	}
	f.Add("é", "\u2028", []byte(`{"name":"x","status":{"startTime":"2026-12-01T05:00:00Z","tasks":[{"phase":"Pending"}]}}`))
	f.Fuzz(func(t *testing.T, name, msg string, data []byte) {
		j := fullJob()
		j.Name, j.Status.Message, j.Status.Tasks[0].Conditions[0].Message = name, msg, msg
		j.Spec.Tasks[0].Name = name
		rec, err := marshalRecord(j)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := json.Marshal(j); !bytes.Equal(rec, want) {
			t.Fatalf("the record\n %s\nis not json.Marshal's\n %s", rec, want)
		}
		var fast, std Job
		if err := gojson.Unmarshal(rec, &fast); err != nil {
			t.Fatalf("go-json refuses json.Marshal's record (%v):\n%s", err, rec)
		}
		if err := json.Unmarshal(rec, &std); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("go-json reads\n %#v\nencoding/json\n %#v\nfrom %s", fast, std, rec)
		}
		// Any input: no panic, and an accepted record re-encodes to a
		// fixed point.
		d, err := DecodeRecord(data)
		if err != nil {
			return
		}
		a, err := marshalRecord(d)
		if err != nil {
			return // a time encoding/json refuses to encode
		}
		back, err := DecodeRecord(a)
		if err != nil {
			t.Fatalf("re-encoded record does not decode (%v):\n%s", err, a)
		}
		if b, _ := marshalRecord(back); !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the job:\n %s\n %s", a, b)
		}
	})
}

// BenchmarkRecordMarshal encodes the fixture job as the Runner does on
// every write (go test -run '^$' -bench Record ./job).
func BenchmarkRecordMarshal(b *testing.B) {
	j := fixtureJob(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := encodePooled(j, func([]byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordUnmarshal decodes the fixture job as the Runner does when
// another process wrote it.
func BenchmarkRecordUnmarshal(b *testing.B) {
	data, err := marshalRecord(fixtureJob(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var j Job
		if err := unmarshalRecord(data, &j); err != nil {
			b.Fatal(err)
		}
	}
}

// codecStrings are the strings fillRandom picks from: plain ones and ones
// every escaping rule of encoding/json applies to.
var codecStrings = []string{
	"", "a", "Succeeded", "power is Off", `quote " and \ backslash`, "<html> & co",
	"tab\tnew\nline\x00\x1f", "é ünïcode ✓", "bad utf8 \xff\xfe", "line sep \u2028 \u2029", "\x7f del",
}

// fillRandom sets the exported fields of v from r: each is left zero with
// probability zeroP, so every omitempty and comma case is reached.
func fillRandom(r *rand.Rand, v reflect.Value, zeroP float64, depth int) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		ts := []time.Time{
			time.Date(2026, 12, 1, 5, 0, 9, 0, time.UTC),
			time.Date(2026, 12, 1, 5, 0, 9, 123456789, time.UTC),
			time.Date(2026, 12, 1, 5, 0, 9, 120000000, time.FixedZone("x", 3600+1800)),
			time.Unix(1700000000, 5).In(time.FixedZone("y", -7*3600)),
		}
		v.Set(reflect.ValueOf(ts[r.Intn(len(ts))]))
		return
	}
	if v.Type() == reflect.TypeFor[task.CustomParams]() { // a custom task's params
		ps := []string{`{}`, `{"tag": "<rack 7> & \u2028é", "n": [1, 2.50, true, null]}`, "{\n \"a\" : {\"b\": \"c\"}\n}"}
		v.SetBytes([]byte(ps[r.Intn(len(ps))]))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(codecStrings[r.Intn(len(codecStrings))])
	case reflect.Bool:
		v.SetBool(r.Intn(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(r.Int63n(1<<40) - 1<<20)
	case reflect.Pointer:
		if depth > 8 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(r, p.Elem(), zeroP, depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 8 {
			return
		}
		n := r.Intn(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillRandom(r, s.Index(i), zeroP, depth+1)
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() || r.Float64() < zeroP {
				continue
			}
			fillRandom(r, v.Field(i), zeroP, depth+1)
		}
	}
}

// codecFixture is a finished three-task netboot job as the Runner stores
// it: conditions, times and wire stats on the job and on every task. It
// is built from JSON so that the benchmark does not depend on how the Go
// types spell their time fields.
const codecFixture = `{"name":"netboot-1","generation":1,"createdAt":"2026-12-01T05:00:00.123456789Z",
"spec":{"bmc":"redfish://10.0.0.5/redfish/v1/Systems/1","credentialsRef":"bmc-1","systemUUID":"4c4c4544-0042-3510-8052-b4c04f565432",
"tasks":[{"power":{"op":"off"}},{"bootDevice":{"device":"pxe","mode":"uefi"}},{"power":{"op":"on"},"timeout":"5m0s"}],"timeout":"30m0s"},
"status":{"observedGeneration":1,
"conditions":[{"type":"Completed","status":"True","observedGeneration":1,"lastTransitionTime":"2026-12-01T05:00:09Z","reason":"Succeeded","message":"3 tasks done"},
{"type":"Running","status":"False","observedGeneration":1,"lastTransitionTime":"2026-12-01T05:00:09Z","reason":"Succeeded","message":"3 tasks done"}],
"result":"Succeeded","reason":"Succeeded","message":"3 tasks done","currentTask":3,
"tasks":[` + codecTaskStatus + `,` + codecTaskStatus + `,` + codecTaskStatus + `],
"startTime":"2026-12-01T05:00:01.5Z","completionTime":"2026-12-01T05:00:09.25Z",
"wire":{"requests":42,"connections":1,"logins":1,"throttled":2,"throttleWait":150000000}}}`

const codecTaskStatus = `{"conditions":[{"type":"Completed","status":"True","observedGeneration":1,"lastTransitionTime":"2026-12-01T05:00:03Z","reason":"Succeeded","message":"power is Off"},
{"type":"Running","status":"False","observedGeneration":1,"lastTransitionTime":"2026-12-01T05:00:03Z","reason":"Succeeded","message":"power is Off"}],
"phase":"Done","result":"Succeeded","reason":"Succeeded","message":"power is Off","attempts":1,
"startTime":"2026-12-01T05:00:01.5Z","requestTime":"2026-12-01T05:00:01.75Z","completionTime":"2026-12-01T05:00:03.125Z"}`

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

// fixtureJob is codecFixture decoded.
func fixtureJob(tb testing.TB) *Job {
	var j Job
	if err := json.Unmarshal([]byte(codecFixture), &j); err != nil {
		tb.Fatal(err)
	}
	return &j
}

var t0dec = time.Date(2026, 12, 1, 5, 0, 0, 123456789, time.UTC)

// stateJobs runs real jobs through a Stepper on fake BMCs and returns each
// job as it was in memory at every write, by name: queued, running,
// succeeded, failed, canceled, plus the every-field wait-for-boot job
// (testdata/records-v0 holds the old codec's records of the same jobs).
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
		s, err := NewStepper(StepperConfig{Locks: syslock.NoLocking, Dialer: fake.New(opts), Clock: clk})
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
