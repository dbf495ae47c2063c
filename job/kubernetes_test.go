package job

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// A job record written before the status times were timestamp.Time (in
// time.Time's encoding) decodes, keeps every instant, and re-encodes to the
// same JSON.
func TestStoredRecordReadableAcrossTimestamp(t *testing.T) {
	var j Job
	require.NoError(t, unmarshalRecord([]byte(codecFixture), &j))
	require.NotNil(t, j.Status.StartTime)
	assert.Equal(t, time.Date(2026, 12, 1, 5, 0, 1, 500_000_000, time.UTC), j.Status.StartTime.UTC())
	assert.Equal(t, time.Date(2026, 12, 1, 5, 0, 3, 125_000_000, time.UTC), j.Status.Tasks[0].CompletionTime.UTC())
	assert.Equal(t, time.Date(2026, 12, 1, 5, 0, 9, 0, time.UTC), j.Status.Conditions[0].LastTransitionTime.UTC())
	assert.Equal(t, 150*time.Millisecond, j.Status.Wire.ThrottleWait)

	again, err := marshalRecord(&j)
	require.NoError(t, err)
	var want, got any
	require.NoError(t, json.Unmarshal([]byte(codecFixture), &want))
	require.NoError(t, json.Unmarshal(again, &got))
	assert.Equal(t, want, got)
}

// task.WaitForBootAction embeds its policy with `json:",inline"` (for
// controller-gen); records keep it flat, as encoding/json does.
func TestInlinePolicyInRecords(t *testing.T) {
	spec := Spec{BMC: "ipmi://10.0.0.6", Tasks: []task.Spec{{WaitForBoot: &task.WaitForBootAction{
		SystemUUID:        "4c4c4544-0042-3510-8052-b4c04f565432",
		WaitForBootPolicy: task.WaitForBootPolicy{Mode: task.BootAnyOf, Signals: []string{"BootStateReceived"}, Retries: 1},
	}}}}
	std, err := json.Marshal(spec)
	require.NoError(t, err)
	rec, err := marshalRecord(spec)
	require.NoError(t, err)
	assert.Equal(t, string(std), string(rec))
	assert.Contains(t, string(rec), `"waitForBoot":{"systemUUID":"4c4c4544-0042-3510-8052-b4c04f565432","mode":"AnyOf"`)
	var back Spec
	require.NoError(t, unmarshalRecord(rec, &back))
	assert.Equal(t, spec, back)
}

// fill sets every field reachable from v (a pointer) to a non-zero value:
// pointers allocated, slices of two elements, maps of one entry. Times are
// set through timestamp.Time's exported field.
func fill(t *testing.T, v reflect.Value, depth int) {
	t.Helper()
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(t, v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 5, 0, depth, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(t, v.Index(i), depth+1)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, depth+1)
		fill(t, e, depth+1)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	default:
		t.Fatalf("fill: unexpected kind %s (%s): an embeddable type must be plain data", v.Kind(), v.Type())
	}
}

// shares reports the path of the first pointer, slice or map that a and b
// (a value and its deep copy) share, or "".
func shares(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		// Pointers to zero-size values (PowerStatusAction) may all be
		// equal in Go; there is nothing to share.
		if a.Pointer() == b.Pointer() && a.Type().Elem().Size() > 0 {
			return path
		}
		return shares(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return path
		}
		for i := 0; i < a.Len(); i++ {
			if p := shares(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Map:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return path
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if p := shares(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
				return p
			}
		}
	}
	return ""
}

// Every field of the embeddable types, set, is deep-copied: this fails when
// a field was added (a pointer, slice or map) and zz_generated.deepcopy.go
// was not regenerated (UPDATE=1 scripts/crdcheck.sh), even where
// controller-gen is not installed.
func TestDeepCopyCoversEveryField(t *testing.T) {
	check := func(name string, orig any, cp func() any) {
		t.Helper()
		fill(t, reflect.ValueOf(orig), 0)
		c := cp()
		assert.Equal(t, orig, c, "%s: the copy differs", name)
		if p := shares(reflect.ValueOf(orig), reflect.ValueOf(c), name); p != "" {
			t.Errorf("%s is shared between a value and its DeepCopy: regenerate zz_generated.deepcopy.go", p)
		}
	}
	spec := &Spec{}
	check("job.Spec", spec, func() any { return spec.DeepCopy() })
	st := &Status{}
	check("job.Status", st, func() any { return st.DeepCopy() })
	ts := &task.Status{}
	check("task.Status", ts, func() any { return ts.DeepCopy() })
	tspec := &task.Spec{}
	check("task.Spec", tspec, func() any { return tspec.DeepCopy() })
	c := &conditions.Condition{}
	check("conditions.Condition", c, func() any { return c.DeepCopy() })
	w := &bmc.Stats{}
	check("bmc.Stats", w, func() any { return w.DeepCopy() })
}
