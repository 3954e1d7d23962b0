package main

import (
	"slices"
	"testing"
)

// naturalCompare orders numbers by value and is a total order;
// comparePaths keeps a znode's descendants right after it.
func TestNaturalOrder(t *testing.T) {
	names := []string{"job-10", "job-2", "job-1", "job-01", "job-a", "job-", "job-9a", "job-9", "x99999999999999999999", "x100000000000000000000", "Job-3", ""}
	want := []string{"", "Job-3", "job-", "job-01", "job-1", "job-2", "job-9", "job-9a", "job-10", "job-a", "x99999999999999999999", "x100000000000000000000"}
	slices.SortFunc(names, naturalCompare)
	if !slices.Equal(names, want) {
		t.Errorf("natural order %q, want %q", names, want)
	}
	for _, a := range want {
		for _, b := range want {
			if naturalCompare(a, b) != -naturalCompare(b, a) || (naturalCompare(a, b) == 0) != (a == b) {
				t.Errorf("not a total order on %q, %q", a, b)
			}
		}
	}
	paths := []string{"/r/a-2", "/r/a/job-10", "/r", "/r/b", "/r/a/job-9", "/r/a"}
	slices.SortFunc(paths, comparePaths)
	if want := []string{"/r", "/r/a", "/r/a/job-9", "/r/a/job-10", "/r/a-2", "/r/b"}; !slices.Equal(paths, want) {
		t.Errorf("path order %q, want %q", paths, want)
	}
}
