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
