package job

import (
	"math/rand"
	"reflect"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// TestTaskConditionsLeftOutForStepperStates: every record a Stepper writes
// (queued, each write of a running job, succeeded, failed, canceled) leaves
// out every task's conditions, and decoding it gives back exactly the
// conditions the job had in memory. If a transition's conditions change
// (a message, a time) without derivedTaskConditions, the records grow back
// and this fails.
func TestTaskConditionsLeftOutForStepperStates(t *testing.T) {
	jobs := stateJobs(t)
	tasks := 0
	for name, j := range jobs {
		rec, err := marshalRecord(j)
		if err != nil {
			t.Fatal(err)
		}
		var raw Job // what is in the record itself
		if err := gojson.Unmarshal(rec, &raw); err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		for i := range j.Status.Tasks {
			want := j.Status.Tasks[i].Conditions
			if len(want) == 0 {
				continue
			}
			if name != "waitForBoot, boot tries, boot restore" { // hand-made, not a Stepper's
				tasks++
				if raw.Status.Tasks[i].Conditions != nil {
					t.Errorf("%s: task %d: conditions written out: %+v", name, i, raw.Status.Tasks[i].Conditions)
				}
			}
			if !reflect.DeepEqual(back.Status.Tasks[i].Conditions, want) {
				t.Errorf("%s: task %d: decoded conditions\n %+v\nwant\n %+v", name, i, back.Status.Tasks[i].Conditions, want)
			}
		}
		if !reflect.DeepEqual(back.Status.Conditions, j.Status.Conditions) {
			t.Errorf("%s: job conditions differ", name)
		}
	}
	if tasks < 40 {
		t.Errorf("only %d task statuses with conditions in %d records", tasks, len(jobs))
	}
}

// TestTaskConditionsRoundTripRandom: for random jobs whose task statuses
// are in the Stepper's phases, with conditions that are the derived ones,
// the derived ones with one field changed, or none, the record decodes to a
// job whose full encoding (nothing left out) is the original's (read back
// as it is, without restoring anything): conditions
// are left out only when the decoder restores them exactly, and a task
// without conditions stays without.
func TestTaskConditionsRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	phases := []task.Phase{task.PhasePending, task.PhaseStarted, task.PhaseRequested, task.PhaseDone, "Other"}
	var leftOut, written, empty int
	for i := range 3000 {
		var j Job
		fillRandom(r, reflect.ValueOf(&j).Elem(), float64(i%5)/5, 0)
		if r.Intn(4) > 0 {
			j.Status.StartTime = timestamp.Ptr(time.Date(2026, 12, 1, 5, 0, 0, r.Intn(2e9), time.UTC))
		}
		for k := range j.Status.Tasks {
			ts := &j.Status.Tasks[k]
			ts.Phase = phases[r.Intn(len(phases))]
			if r.Intn(3) == 0 {
				ts.StartTime = nil
			}
			if r.Intn(5) == 0 {
				ts.Reason = ""
			}
			c, rn, ok := derivedTaskConditions(&j.Status, ts)
			switch {
			case !ok || r.Intn(5) == 0:
				ts.Conditions = nil
				empty++
			default:
				ts.Conditions = []conditions.Condition{c, rn}
				switch r.Intn(8) {
				case 0:
					ts.Conditions[r.Intn(2)].Message += "!"
				case 1:
					ts.Conditions[r.Intn(2)].LastTransitionTime.Time = ts.Conditions[0].LastTransitionTime.Add(time.Second)
				case 2: // the same instant in another zone: written out
					ts.Conditions[1].LastTransitionTime.Time = ts.Conditions[1].LastTransitionTime.In(time.FixedZone("X", 3600))
				case 3:
					ts.Conditions[0].ObservedGeneration++
				case 4:
					ts.Conditions = append(ts.Conditions, conditions.Condition{Type: "Extra", Status: conditions.True})
				default:
					leftOut++
					continue
				}
				written++
			}
		}
		rec, err := marshalRecord(&j)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRecord(rec)
		if err != nil {
			t.Fatalf("job %d: %v\n%s", i, err, rec)
		}
		// The reference: the job written out in full and read back as it
		// is (random strings are not all valid UTF-8, so j itself is not).
		full, err := marshalFull(&j)
		var ref Job
		if err == nil {
			err = gojson.Unmarshal(full, &ref)
		}
		want, err1 := marshalFull(&ref)
		got, err2 := marshalFull(back)
		if err != nil || err1 != nil || err2 != nil {
			t.Fatal(err, err1, err2)
		}
		if string(got) != string(want) {
			k := 0
			for k < min(len(got), len(want)) && got[k] == want[k] {
				k++
			}
			t.Fatalf("job %d: decoded and written out in full, differs at byte %d:\n got  ...%s\n want ...%s", i, k, got[max(k-200, 0):min(k+100, len(got))], want[max(k-200, 0):min(k+100, len(want))])
		}
	}
	if leftOut < 100 || written < 100 || empty < 100 {
		t.Errorf("cases: %d left out, %d written, %d empty", leftOut, written, empty)
	}
}

// marshalFull encodes j as the Runner does, but with every task's
// conditions written out (what go-json writes).
func marshalFull(j *Job) ([]byte, error) {
	writeAllTaskConditions.Store(true)
	defer writeAllTaskConditions.Store(false)
	return marshalRecord(j)
}
