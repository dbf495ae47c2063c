// Package biosattrs is what the job package's bios kind does with BIOS
// attributes that needs no BMC: describing the ones that differ, merging
// the pending ones over the current, and bounding what a task's status
// stores. Pure functions of bmc.BIOSAttributes.
package biosattrs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bmckit/bmckit/bmc"
)

// MaxStored bounds the attributes a bios task stores.
const MaxStored = 1024

// MaxValue bounds each attribute value a bios task stores, in bytes.
const MaxValue = 1024

// DescribeDiffer names the attributes that differ with their current
// values (never the requested ones: the message is the job's status).
func DescribeDiffer(names []string, cur bmc.BIOSAttributes) string {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		if v, ok := cur[n]; ok {
			parts = append(parts, fmt.Sprintf("%s (now %s)", n, v))
		} else {
			parts = append(parts, n+" (not reported)")
		}
	}
	s := strings.Join(parts, ", ")
	if len(s) > 1000 {
		s = s[:1000] + "..."
	}
	return s
}

// Merged is a with b's entries over it (the pending values over the
// current ones: what the next boot applies); neither is changed.
func Merged(a, b bmc.BIOSAttributes) bmc.BIOSAttributes {
	m := maps.Clone(a)
	if m == nil {
		m = bmc.BIOSAttributes{}
	}
	maps.Copy(m, b)
	return m
}

// Bound returns a with at most MaxStored entries (the first by name), each
// value cut to MaxValue bytes (a structured attribute kept as JSON can be
// long: Cray EX boot orders); truncated reports either cut, or is passed
// through when neither was needed.
func Bound(a bmc.BIOSAttributes, truncated bool) (bmc.BIOSAttributes, bool) {
	long := false
	for _, v := range a {
		if len(v) > MaxValue {
			long = true
			break
		}
	}
	if len(a) <= MaxStored && !long {
		return a, truncated
	}
	names := slices.Sorted(maps.Keys(a))
	if len(names) > MaxStored {
		names, truncated = names[:MaxStored], true
	}
	out := bmc.BIOSAttributes{}
	for _, k := range names {
		v := a[k]
		if len(v) > MaxValue {
			v, truncated = strings.ToValidUTF8(v[:MaxValue], ""), true
		}
		out[k] = v
	}
	return out, truncated
}
