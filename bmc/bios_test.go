package bmc_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func ptr(v int64) *int64 { return &v }

var testRegistry = bmc.BIOSRegistry{ID: "BiosAttributeRegistry.v1_0_0", Attributes: []bmc.BIOSAttributeDef{
	{Name: "BootMode", Type: bmc.BIOSEnumeration, Values: []string{"Uefi", "Bios"}},
	{Name: "SriovEnable", Type: bmc.BIOSBoolean},
	{Name: "PxeRetryCount", Type: bmc.BIOSInteger, LowerBound: ptr(0), UpperBound: ptr(10)},
	{Name: "AssetTag", Type: bmc.BIOSString, MinLength: ptr(1), MaxLength: ptr(8)},
	{Name: "SystemModelName", Type: bmc.BIOSString, ReadOnly: true},
	{Name: "AdminPassword", Type: bmc.BIOSPassword},
}}

func TestValidateBIOSAttributesAccepts(t *testing.T) {
	err := bmc.ValidateBIOSAttributes(testRegistry, bmc.BIOSAttributes{
		"BootMode": "Bios", "SriovEnable": "true", "PxeRetryCount": "10", "AssetTag": "rack-7",
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestValidateBIOSAttributesRefuses(t *testing.T) {
	for _, tc := range []struct {
		attr, value, want string
	}{
		{"NoSuchThing", "1", "unknown attribute"},
		{"BootMode", "Legacy", `want one of "Uefi", "Bios"`},
		{"SriovEnable", "yes", "not a Boolean"},
		{"PxeRetryCount", "eleven", "not an Integer"},
		{"PxeRetryCount", "03", "not an Integer"},
		{"PxeRetryCount", "+3", "not an Integer"},
		{"PxeRetryCount", "11", "above the upper bound 10"},
		{"PxeRetryCount", "-1", "below the lower bound 0"},
		{"AssetTag", "", "shorter than the minimum 1"},
		{"AssetTag", "way-too-long", "longer than the maximum 8"},
		{"SystemModelName", "x", "read-only"},
	} {
		err := bmc.ValidateBIOSAttributes(testRegistry, bmc.BIOSAttributes{tc.attr: tc.value})
		if err == nil {
			t.Errorf("%s=%q: accepted", tc.attr, tc.value)
			continue
		}
		var ae *bmc.BIOSAttributeError
		if !errors.As(err, &ae) || ae.Attribute != tc.attr || ae.Value != tc.value {
			t.Errorf("%s=%q: error %v does not name the attribute and value (%+v)", tc.attr, tc.value, err, ae)
		}
		if !errors.Is(err, bmc.ErrInvalidBIOSAttribute) || bmc.IsTransient(err) {
			t.Errorf("%s=%q: error %v: want permanent, wrapping ErrInvalidBIOSAttribute", tc.attr, tc.value, err)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.attr) {
			t.Errorf("%s=%q: error %q: want it to name the attribute and say %q", tc.attr, tc.value, err, tc.want)
		}
	}
}

func TestValidateBIOSAttributesPasswordNeverPrinted(t *testing.T) {
	err := bmc.ValidateBIOSAttributes(testRegistry, bmc.BIOSAttributes{"AdminPassword": "Sup3r-s3cret"})
	if err == nil || strings.Contains(err.Error(), "Sup3r-s3cret") || !strings.Contains(err.Error(), "AdminPassword") {
		t.Fatalf("error %v: want a refusal naming AdminPassword without its value", err)
	}
}

func TestValidateBIOSAttributesJoinsAllSorted(t *testing.T) {
	err := bmc.ValidateBIOSAttributes(testRegistry, bmc.BIOSAttributes{"Zzz": "1", "BootMode": "x", "AssetTag": "ok"})
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	i, j := strings.Index(msg, "BootMode"), strings.Index(msg, "Zzz")
	if i < 0 || j < 0 || i > j || strings.Contains(msg, "AssetTag") {
		t.Fatalf("error %q: want BootMode then Zzz, and not the valid AssetTag", msg)
	}
	if err := bmc.ValidateBIOSAttributes(testRegistry, nil); err == nil {
		t.Fatal("an empty set was accepted")
	}
}

func TestBIOSAttributesDiffering(t *testing.T) {
	want := bmc.BIOSAttributes{"A": "1", "B": "x", "C": "true"}
	got := want.Differing(bmc.BIOSAttributes{"A": "1", "B": "y"})
	if strings.Join(got, ",") != "B,C" {
		t.Fatalf("Differing = %v, want [B C]", got)
	}
}

// A refusal is one line and bounded whatever is asked and whatever the
// registry holds: several problems (the first 5 spelt out, sorted),
// long or multi-line values and names, a long list of allowed values.
func TestValidateBIOSAttributesOneLineBounded(t *testing.T) {
	var values []string
	for i := range 500 {
		values = append(values, strings.Repeat("v", i%40)+"\n")
	}
	reg := bmc.BIOSRegistry{ID: "r\nr", Attributes: []bmc.BIOSAttributeDef{
		{Name: "Many", Type: bmc.BIOSEnumeration, Values: values},
		{Name: "Tag", Type: bmc.BIOSString, MaxLength: ptr(4)},
	}}
	attrs := bmc.BIOSAttributes{
		"Many": "x", "Tag": strings.Repeat("line\n", 2000),
		strings.Repeat("Unknown\n", 100): "1", "U1": "1", "U2": "1", "U3": "1", "U4": "1",
	}
	var first string
	for i := range 20 {
		err := bmc.ValidateBIOSAttributes(reg, attrs)
		if err == nil {
			t.Fatal("accepted")
		}
		msg := err.Error()
		if strings.ContainsAny(msg, "\n\r") || len(msg) > 2000 {
			t.Fatalf("message is not one bounded line (%d bytes): %q", len(msg), msg)
		}
		if !strings.HasSuffix(msg, "; and 2 more") {
			t.Fatalf("message %q: want the first 5 problems and 'and 2 more'", msg)
		}
		if i == 0 {
			first = msg
		} else if msg != first {
			t.Fatalf("message changed from run to run:\n%q\n%q", first, msg)
		}
		var ae *bmc.BIOSAttributeError
		if !errors.As(err, &ae) || !errors.Is(err, bmc.ErrInvalidBIOSAttribute) || bmc.IsTransient(err) {
			t.Fatalf("error %v: want permanent, wrapping ErrInvalidBIOSAttribute and *BIOSAttributeError", err)
		}
	}
}

// An attribute whose type is unknown (a structured value no registry
// types) is refused, naming it.
func TestValidateBIOSAttributesUnknownType(t *testing.T) {
	reg := bmc.BIOSRegistry{Attributes: []bmc.BIOSAttributeDef{{Name: "BootOrder"}}}
	err := bmc.ValidateBIOSAttributes(reg, bmc.BIOSAttributes{"BootOrder": `["Pxe"]`})
	var ae *bmc.BIOSAttributeError
	if !errors.As(err, &ae) || ae.Attribute != "BootOrder" || !strings.Contains(err.Error(), "no type is known") {
		t.Fatalf("error %v: want a BIOSAttributeError naming BootOrder, type unknown", err)
	}
}
