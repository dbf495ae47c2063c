package biosattrs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func TestBound(t *testing.T) {
	small := bmc.BIOSAttributes{"A": "1"}
	if got, tr := Bound(small, false); len(got) != 1 || tr {
		t.Errorf("a small set was cut: %v %t", got, tr)
	}
	many := bmc.BIOSAttributes{}
	for i := range MaxStored + 5 {
		many[fmt.Sprintf("A%05d", i)] = "v"
	}
	many["A00000"] = strings.Repeat("é", MaxValue) // 2 bytes each: cut inside one
	got, tr := Bound(many, false)
	if !tr || len(got) != MaxStored {
		t.Fatalf("%d attributes kept (truncated %t), want %d", len(got), tr, MaxStored)
	}
	if v := got["A00000"]; len(v) > MaxValue || !strings.HasPrefix(v, "é") || strings.ContainsRune(v, '\uFFFD') {
		t.Errorf("a long value cut to %d bytes (valid UTF-8 wanted)", len(v))
	}
	if _, ok := got[fmt.Sprintf("A%05d", MaxStored)]; ok {
		t.Errorf("kept an attribute past the first %d by name", MaxStored)
	}
}

func TestMergedAndDescribeDiffer(t *testing.T) {
	cur := bmc.BIOSAttributes{"A": "1", "B": "2"}
	m := Merged(cur, bmc.BIOSAttributes{"B": "3"})
	if m["A"] != "1" || m["B"] != "3" || cur["B"] != "2" {
		t.Errorf("Merged = %v (cur %v)", m, cur)
	}
	if d := DescribeDiffer([]string{"B", "C"}, cur); d != "B (now 2), C (not reported)" {
		t.Errorf("DescribeDiffer = %q", d)
	}
}
