package redfish

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestWithURLOptions(t *testing.T) {
	base := Options{RequestTimeout: 30 * time.Second}.withDefaults()
	got, err := base.withURLOptions("bootOnce=emulate&events=off&timeout=1500ms")
	if err != nil {
		t.Fatal(err)
	}
	if !got.EmulateBootOnce || !got.NoEventStream || got.RequestTimeout != 1500*time.Millisecond {
		t.Fatalf("got EmulateBootOnce=%v NoEventStream=%v RequestTimeout=%s; want true, true, 1.5s", got.EmulateBootOnce, got.NoEventStream, got.RequestTimeout)
	}
	// The other direction: the address turns off what the Dialer turned on.
	on := base
	on.EmulateBootOnce, on.NoEventStream = true, true
	got, err = on.withURLOptions("bootOnce=native&events=on")
	if err != nil {
		t.Fatal(err)
	}
	if got.EmulateBootOnce || got.NoEventStream || got.RequestTimeout != 30*time.Second {
		t.Fatalf("got EmulateBootOnce=%v NoEventStream=%v RequestTimeout=%s; want false, false, the Dialer's 30s", got.EmulateBootOnce, got.NoEventStream, got.RequestTimeout)
	}

	for _, tc := range []struct{ raw, want string }{
		{"bootOnce=yes", `option bootOnce="yes" in the BMC URL: want emulate or native`},
		{"bootOnce=", `option bootOnce="" in the BMC URL: want emulate or native`},
		{"bootOnce=Emulate", `option bootOnce="Emulate" in the BMC URL: want emulate or native`},
		{"events=false", `option events="false" in the BMC URL: want on or off`},
		{"timeout=0s", `option timeout="0s" in the BMC URL: want a positive duration such as 30s`},
		{"timeout=-1s", `option timeout="-1s" in the BMC URL: want a positive duration`},
		{"timeout=10", `option timeout="10" in the BMC URL: want a positive duration`},
		{"bootonce=emulate", `unknown option "bootonce" in the BMC URL: want one of bootOnce, events, timeout`},
		{"rps=10", `unknown option "rps" in the BMC URL: want one of bootOnce, events, timeout`},
		{"cipher=3", `unknown option "cipher"`},
		{"events=on&events=off", `option "events" in the BMC URL is given 2 times`},
		{"timeout=%zz", "options in the BMC URL"},
		{"&", "empty options query"},
		// The first bad option in name order is the one named.
		{"timeout=x&events=maybe", `option events="maybe"`},
	} {
		_, err := base.withURLOptions(tc.raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("withURLOptions(%q) = %v; want an error containing %q", tc.raw, err, tc.want)
		}
	}
}

// FuzzURLOptions: the option parser never panics; what it accepts has
// exactly the known names, each once, with a value it documents; what it
// refuses it refuses with an error naming an option or the query.
func FuzzURLOptions(f *testing.F) {
	for _, s := range []string{
		"bootOnce=emulate", "bootOnce=native", "events=on", "events=off", "timeout=10s",
		"bootOnce=emulate&events=off&timeout=1500ms", "timeout=0s", "timeout=-1s", "timeout=1e9",
		"events=on&events=off", "x=1", "=1", "&", "", "timeout=%zz", "bootOnce=emulate;events=off",
		"bootOnce", "events=on%26timeout=1s", "timeout=9999999999h",
	} {
		f.Add(s)
	}
	base := Options{}.withDefaults()
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := base.withURLOptions(raw)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "redfish: ") || !strings.Contains(err.Error(), "BMC URL") {
				t.Fatalf("error %q does not say it is about the BMC URL's options", err)
			}
			return
		}
		vals, perr := url.ParseQuery(raw)
		if perr != nil || len(vals) == 0 {
			t.Fatalf("accepted %q, which is no options query (%v)", raw, perr)
		}
		for name, vs := range vals {
			if len(vs) != 1 {
				t.Fatalf("accepted %q with %s given %d times", raw, name, len(vs))
			}
			switch v := vs[0]; name {
			case "bootOnce":
				if got.EmulateBootOnce != (v == "emulate") {
					t.Fatalf("%q: EmulateBootOnce %v", raw, got.EmulateBootOnce)
				}
			case "events":
				if got.NoEventStream != (v == "off") {
					t.Fatalf("%q: NoEventStream %v", raw, got.NoEventStream)
				}
			case "timeout":
				if d, err := time.ParseDuration(v); err != nil || d <= 0 || got.RequestTimeout != d {
					t.Fatalf("%q: RequestTimeout %s", raw, got.RequestTimeout)
				}
			default:
				t.Fatalf("accepted %q with unknown option %q", raw, name)
			}
		}
	})
}
