package timestamp_test

import (
	"encoding/json"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/timestamp"
)

// sample times: the zero time, nanoseconds, a non-UTC offset, a named zone.
func samples(t *testing.T) []time.Time {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("CET", 3600)
	}
	return []time.Time{
		{},
		time.Date(2026, 12, 1, 5, 55, 47, 123456789, time.UTC),
		time.Date(2026, 12, 1, 5, 55, 47, 0, time.UTC),
		time.Date(2026, 12, 1, 5, 55, 47, 500, time.FixedZone("", -7*3600-1800)),
		time.Date(2026, 7, 1, 12, 0, 0, 1, berlin),
	}
}

type withTime struct {
	At  time.Time  `json:"at"`
	Opt *time.Time `json:"opt,omitempty"`
}

type withStamp struct {
	At  timestamp.Time  `json:"at"`
	Opt *timestamp.Time `json:"opt,omitempty"`
}

// Records written with time.Time fields (before Time existed) decode into
// Time fields, and Time encodes byte for byte as time.Time did, with both
// encoding/json and goccy/go-json (the Runner's record codec).
func TestEncodesExactlyAsTimeTime(t *testing.T) {
	codecs := []struct {
		name      string
		marshal   func(any) ([]byte, error)
		unmarshal func([]byte, any) error
	}{
		{"encoding/json", json.Marshal, json.Unmarshal},
		{"goccy", gojson.Marshal, gojson.Unmarshal},
	}
	for _, c := range codecs {
		for _, tm := range samples(t) {
			old, err := c.marshal(withTime{At: tm, Opt: &tm})
			require.NoError(t, err)
			now, err := c.marshal(withStamp{At: timestamp.New(tm), Opt: timestamp.Ptr(tm)})
			require.NoError(t, err)
			assert.Equal(t, string(old), string(now), "%s: %v", c.name, tm)

			var got withStamp
			require.NoError(t, c.unmarshal(old, &got), c.name)
			assert.True(t, got.At.Equal(tm), "%s: %v decoded as %v", c.name, tm, got.At)
			require.NotNil(t, got.Opt)
			assert.True(t, got.Opt.Equal(tm), c.name)

			var back withTime
			require.NoError(t, c.unmarshal(now, &back), c.name)
			assert.True(t, back.At.Equal(tm), c.name)
		}
	}
}

func TestNullLeavesTimeUnchanged(t *testing.T) {
	at := timestamp.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	require.NoError(t, json.Unmarshal([]byte("null"), &at))
	assert.Equal(t, 2026, at.Year())

	var s withStamp
	require.NoError(t, json.Unmarshal([]byte(`{"at":"2026-01-02T03:04:05Z","opt":null}`), &s))
	assert.Nil(t, s.Opt)
}

func TestRejectsWhatTimeTimeRejects(t *testing.T) {
	for _, in := range []string{`"yesterday"`, `12345`, `"2026-13-01T00:00:00Z"`, `"2026-01-01"`} {
		var std time.Time
		var ts timestamp.Time
		assert.Error(t, json.Unmarshal([]byte(in), &std), in)
		assert.Error(t, json.Unmarshal([]byte(in), &ts), in)
	}
}

func TestDeepCopy(t *testing.T) {
	orig := timestamp.Ptr(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	cp := orig.DeepCopy()
	require.NotSame(t, orig, cp)
	assert.True(t, cp.Equal(orig.Time))
	cp.Time = cp.Add(time.Hour)
	assert.Equal(t, 3, orig.Hour(), "mutating the copy changed the original")

	var nilTime *timestamp.Time
	assert.Nil(t, nilTime.DeepCopy())
}

// FuzzUnmarshalJSON checks that Time decodes exactly what time.Time decodes
// (same acceptance, same instant) and re-encodes to the same bytes.
func FuzzUnmarshalJSON(f *testing.F) {
	for _, s := range []string{`"2026-12-01T05:55:47.123456789Z"`, `"0001-01-01T00:00:00Z"`, `"2026-12-01T05:55:47+05:30"`, `null`, `""`, `"2026-12-01T05:55:47.Z"`, `1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var std time.Time
		var ts timestamp.Time
		errStd := std.UnmarshalJSON(data)
		errTS := ts.UnmarshalJSON(data)
		if (errStd == nil) != (errTS == nil) {
			t.Fatalf("time.Time error %v, Time error %v for %q", errStd, errTS, data)
		}
		if errStd != nil {
			return
		}
		if !std.Equal(ts.Time) {
			t.Fatalf("%q: time.Time %v, Time %v", data, std, ts.Time)
		}
		a, errA := json.Marshal(std)
		b, errB := json.Marshal(ts)
		if (errA == nil) != (errB == nil) || string(a) != string(b) {
			t.Fatalf("%q re-encoded: time.Time %s (%v), Time %s (%v)", data, a, errA, b, errB)
		}
	})
}
