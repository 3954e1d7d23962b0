package gocronlock_test

import (
	"errors"
	"testing"

	"github.com/tierlock/tierlock/gocronlock"
)

// TestRule walks the rule through #841's shape by hand: server times in
// ms, instances 150 ms apart, a window of 500 ms, a tick a second. Each
// attempt reads the record and mtime the previous attempt left, derives
// the last run, writes, and decides with its own write's mtime.
func TestRule(t *testing.T) {
	const w = 500
	type attempt struct {
		now  int64
		want bool
	}
	attempts := []attempt{
		{1000, true}, {1150, false}, {1300, false}, // tick 1
		{2000, true}, {2150, false}, {2300, false}, // tick 2
		{3300, true},                // only the last instance is up
		{4000, true}, {4150, false}, // tick 4: 700 ms after the last run
		{4100 - 10*w, true}, // the clock went back by far more than w
	}
	// The first attempt created the node with Last 0.
	data, mtime := gocronlock.Record(0, w), int64(1000)
	for i, a := range attempts[1:] {
		last := gocronlock.LastRunOf(data, mtime)
		got := gocronlock.Ran(a.now, last, w)
		if got != a.want {
			t.Fatalf("attempt %d at %d (last run %d): ran %v, want %v", i+1, a.now, last, got, a.want)
		}
		data, mtime = gocronlock.Record(last, w), a.now
	}
}

func TestRan(t *testing.T) {
	for _, c := range []struct {
		now, last, w int64
		want         bool
	}{
		{1000, 0, 500, true},
		{1499, 1000, 500, false},
		{1500, 1000, 500, true},
		{1000, 1000, 500, false},
		{900, 1000, 500, false}, // the clock went back less than w: skip
		{499, 1000, 500, true},  // more than w: run
	} {
		if got := gocronlock.Ran(c.now, c.last, c.w); got != c.want {
			t.Errorf("Ran(%d, %d, %d) = %v, want %v", c.now, c.last, c.w, got, c.want)
		}
	}
}

func TestLastRun(t *testing.T) {
	for _, c := range []struct {
		name  string
		data  []byte
		mtime int64
		want  int64
	}{
		{"the write ran", gocronlock.Record(1000, 500), 1600, 1600},
		{"the write skipped", gocronlock.Record(1000, 500), 1200, 1000},
		{"its own window decides", gocronlock.Record(1000, 100), 1200, 1200},
		{"unreadable: a run at mtime", []byte("garbage"), 1200, 1200},
		{"no window: a run at mtime", []byte(`{"last":1000}`), 1200, 1200},
		{"empty: a run at mtime", nil, 1200, 1200},
	} {
		if got := gocronlock.LastRunOf(c.data, c.mtime); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestNodeName(t *testing.T) {
	seen := map[string]string{}
	for _, key := range []string{"a", "a/b", "a%2Fb", ".", "..", "...", "%2E", "über", "x y", "main.job.func1"} {
		name, err := gocronlock.NodeName(key)
		if err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("%q and %q both map to %q", prev, key, name)
		}
		seen[name] = key
		if name == "." || name == ".." {
			t.Errorf("%q maps to %q, a relative segment", key, name)
		}
	}
	for _, key := range []string{"", string(make([]byte, gocronlock.MaxKeyLen+1))} {
		if _, err := gocronlock.NodeName(key); !errors.Is(err, gocronlock.ErrInvalidKey) {
			t.Errorf("key of %d bytes: %v, want ErrInvalidKey", len(key), err)
		}
	}
}
