//go:build !tierlocktrace

package trace_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// Without the tierlocktrace tag recording is off: Start sets up nothing,
// even with TIERLOCK_TRACE set, and the record functions write nothing.
func TestOffWritesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(trace.EnvDir, dir)
	if trace.Enabled {
		t.Fatal("Enabled without the tag")
	}
	r, err := trace.Start(dir)
	if r != nil || err != nil {
		t.Fatalf("Start = %v, %v", r, err)
	}
	recordAll()
	if err := trace.Stop(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("off, yet %d files written", len(ents))
	}
}

// The record functions cost nothing when off: no allocation (and, per
// `go build -gcflags=-m`, no call: each is inlined to nothing).
func TestOffAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, recordAll); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}

var errX = errors.New("x")

func recordAll() {
	var c *zk.Conn
	trace.GateEntered(c, "/l", true)
	trace.HandoffRide(c, "/l", "/l/n")
	trace.GatePassed(c, "/l")
	trace.GateLeft(c, "/l")
	trace.Sent(c, trace.OpCreate, "/l/p")
	trace.Answered(c, trace.OpCreate, "/l/p", "/l/n", errX)
	trace.Listed(c, trace.OpList, "/l", nil, nil, errX)
	trace.Watched(c, "/l/n", nil, errX)
	trace.RetrySent(c, "/l/n")
	trace.RetryAnswered(c, "/l/n", errX)
	trace.Turned(c, "/l/n", 0, true, 1)
	trace.Evented(c, zk.Event{})
	trace.Renewed(c, 1, time.Time{}, time.Time{})
	trace.Lapsed(c, 1)
	trace.Judged(c, 1, 0)
	trace.Granted(c, "/l", "/l/n", 1, 2, errX)
	trace.Lost(c, "/l/n", errX)
	trace.Released(c, "/l", "/l/n")
	trace.DelAdded(c, "/l", "/l/n", 1)
	trace.SessionOpened(c, c, true, time.Second)
	trace.WritesSent(c, 1, func(int) (bool, []any) { return false, nil })
	trace.WritesAnswered(c, 1, func(int) (bool, []any) { return false, nil }, nil, errX)
	trace.Wrote(c, 1, time.Time{}, "")
	trace.Handshook(c, 1, 1, time.Time{})
	trace.Touched(c, time.Time{}, time.Time{})
	trace.ConnHandshook(c, 1, time.Second)
	trace.Paused(1, time.Time{}, time.Time{})
}
