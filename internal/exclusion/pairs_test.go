package exclusion

import "testing"

func TestOverlapPairs(t *testing.T) {
	fam := func(p int32) string { return []string{"tier", "curator", "kazoo"}[p] }
	holds := []Hold{
		{Proc: 0, Enter: 0, Exit: 10},
		{Proc: 1, Enter: 10, Exit: 20}, // touches, no overlap
		{Proc: 2, Enter: 15, Exit: 30}, // overlaps curator
		{Proc: 1, Enter: 25, Exit: 26}, // overlaps kazoo
		{Proc: 0, Enter: 5, Exit: 6, Path: 1},
	}
	got := OverlapPairs(holds, fam)
	if len(got) != 1 || got["curator+kazoo"] != 2 {
		t.Fatalf("pairs %v", got)
	}
}
