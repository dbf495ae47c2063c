package autocompact

import "testing"

func TestPolicy(t *testing.T) {
	p := New(10)
	var got []int64
	for rev := int64(1); rev <= 3*every; rev++ {
		if to := p.AfterDelete(rev); to != 0 {
			got = append(got, to)
		}
	}
	if len(got) != 3 || got[0] != every-10 || got[2] != 3*every-10 {
		t.Fatalf("compactions at %v, want every %d deletes, 10 revisions back", got, every)
	}
	never := New(-1)
	for rev := int64(1); rev <= 2*every; rev++ {
		if to := never.AfterDelete(rev); to != 0 {
			t.Fatalf("negative keep compacted to %d", to)
		}
	}
	if New(0).keep != DefaultKeep {
		t.Fatal("zero keep is not the default")
	}
}
