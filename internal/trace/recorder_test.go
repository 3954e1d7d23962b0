package trace_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/trace"
)

// A recorder numbers its steps in order and writes one JSON line each,
// which Read gives back.
func TestRecorderRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	r := trace.NewRecorder(&buf)
	r.Record(nil, trace.Step{Kind: trace.Send, Op: trace.OpCreate, Path: "/l"})
	r.Record(nil, trace.Step{Kind: trace.Answer, Op: trace.OpCreate, Node: "/l/n-1", Out: trace.Class(zk.ErrNoNode)})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Record(nil, trace.Step{Kind: trace.Grant}) // dropped: closed
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines, want 2:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), `"kind":"send"`) {
		t.Errorf("kind not written by name: %s", buf.String())
	}
	steps, err := trace.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].Seq != 1 || steps[1].Seq != 2 || steps[0].Kind != trace.Send ||
		steps[1].Kind != trace.Answer || steps[1].Out != "nonode" || steps[0].T > steps[1].T {
		t.Errorf("read back %v", steps)
	}
	if r.Since(time.Time{}) != 0 {
		t.Error("Since(zero) != 0")
	}
}

// Class sorts errors into what the model tells apart.
func TestClass(t *testing.T) {
	for err, want := range map[error]string{
		nil:                    "",
		zk.ErrNoNode:           "nonode",
		zk.ErrConnectionClosed: "conn",
		zk.ErrSessionExpired:   "expired",
		zk.ErrNoAuth:           "refused",
		errors.New("x"):        "err",
	} {
		if got := trace.Class(err); got != want {
			t.Errorf("Class(%v) = %q, want %q", err, got, want)
		}
	}
	var k trace.Kind
	if err := k.UnmarshalText([]byte("lapse")); err != nil || k != trace.Lapse {
		t.Errorf("UnmarshalText(lapse) = %v, %v", k, err)
	}
}
