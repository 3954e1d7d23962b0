package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
)

// Keys are listed in natural order, numbers by value (job-2 before
// job-10), by ls ROOT (table and -json), ls -l and watch ROOT alike; a
// directory's locks come right after it, as in the walk.
func TestLsNaturalOrder(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	s := connect(t)
	names := []string{"job-10", "job-2", "job-1", "job-a", "batch/job-10", "batch/job-9", "batch-2/job-0"}
	for _, n := range names {
		acquire(t, ctx, newLock(t, s, root+"/"+n))
	}
	want := []string{"batch/job-9", "batch/job-10", "batch-2/job-0", "job-1", "job-2", "job-10", "job-a"}

	r := tierlock(t, "ls", root)
	r.want(t, exitOK)
	if got := firstColumn(r.stdout, want); !slices.Equal(got, want) {
		t.Errorf("ls ROOT: keys in order %q, want %q:\n%s", got, want, r.stdout)
	}

	r = tierlock(t, "ls", "-json", root)
	r.want(t, exitOK)
	var doc struct{ Locks []struct{ Name string } }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	var got []string
	for _, l := range doc.Locks {
		got = append(got, l.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("ls -json ROOT: keys in order %q, want %q", got, want)
	}

	r = tierlock(t, "ls", "-l", root)
	r.want(t, exitOK)
	got = nil
	for _, line := range strings.Split(r.stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, root+"/"); ok && strings.Contains(rest, "  (") {
			got = append(got, rest[:strings.Index(rest, "  (")])
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("ls -l ROOT: headings in order %q, want %q:\n%s", got, want, r.stdout)
	}

	r = tierlock(t, "watch", "-count", "1", root)
	r.want(t, exitOK)
	var listed []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == "listed" {
			listed = append(listed, f[2])
		}
	}
	if !slices.Equal(listed, want) {
		t.Errorf("watch ROOT: keys in order %q, want %q:\n%s", listed, want, r.stdout)
	}
}

// firstColumn returns the first field of each line of out that is one of
// names, in order.
func firstColumn(out string, names []string) []string {
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && slices.Contains(names, f[0]) {
			got = append(got, f[0])
		}
	}
	return got
}

// cells maps the header of ls's table of a root to the cells of the row
// of lock name; the last column (HOLDER) takes the rest of the line.
func cells(t *testing.T, out, name string) map[string]string {
	t.Helper()
	lines := strings.Split(out, "\n")
	var header []string
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "LOCK" || (len(f) > 2 && f[0] == "TIME")) {
			header = f
			continue
		}
		if header == nil || len(f) < len(header)-1 || f[slices.Index(header, "LOCK")] != name {
			continue
		}
		m := map[string]string{}
		for i, h := range header[:len(header)-1] {
			m[h] = f[i]
		}
		m[header[len(header)-1]] = strings.Join(f[len(header)-1:], " ")
		return m
	}
	t.Fatalf("no row %q under a header in:\n%s", name, out)
	return nil
}
