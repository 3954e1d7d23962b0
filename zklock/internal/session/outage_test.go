package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// An outage closed while its last dial is connected and its server has not
// answered the handshake says so, not the error of a dial before it (issue
// 68: a program's last line blamed a refused dial, while the last one had
// connected to a server that never answered). An outage that ends in a
// session keeps the last failure: it is why the outage lasted.
func TestOutageToldWhereTheLastDialStands(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for _, c := range []struct {
		end        string
		unanswered error
		want       string
	}{
		{"the session was closed", nil, "connection refused"},
		{"the session was closed", &wire.UnansweredError{Addr: "127.0.0.1:2", After: 3 * time.Second}, "connected to 127.0.0.1:2, no answer to the handshake after 3s"},
		{"connected", nil, "connection refused"},
	} {
		var buf bytes.Buffer
		o := &outage{log: slog.New(slog.NewJSONHandler(&buf, nil)), unanswered: func() error { return c.unanswered }}
		o.dialed("127.0.0.1:1", refused)
		o.ends(c.end, 0, 1)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		var last map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
			t.Fatal(err)
		}
		if got, _ := last["last_dial_error"].(string); !strings.Contains(got, c.want) {
			t.Errorf("ended (%s) with %v awaited: last_dial_error %q, want %q", c.end, c.unanswered, got, c.want)
		}
	}
}

// A connection given up unanswered is a failed dial, and its error, which
// names the server and says it connected, is the outage's cause.
func TestOutageCausedByAnUnansweredHandshake(t *testing.T) {
	var buf bytes.Buffer
	o := &outage{log: slog.New(slog.NewJSONHandler(&buf, nil))}
	e := &wire.UnansweredError{Addr: "127.0.0.1:2", After: 2 * time.Second}
	o.dialed("127.0.0.1:2", nil)
	o.dialed("127.0.0.1:2", e)
	var begun map[string]any
	if err := json.Unmarshal(buf.Bytes(), &begun); err != nil {
		t.Fatal(err)
	}
	if begun["cause"] != e.Error() || o.dials != 1 {
		t.Fatalf("cause %q after %d failed dials; want %q after 1", begun["cause"], o.dials, e.Error())
	}
}

// An outage that begins as this process resumes from a stall (a 15-s
// SIGSTOP: the server expired the session meanwhile) is the stall's: its
// lines say the stall's length, as the process measured it, and count the
// outage from the stall's start. They said "after=2.005s", from when the
// process noticed the connection gone, after the stop.
func TestOutageOfAStallCountedFromIt(t *testing.T) {
	var buf bytes.Buffer
	o := &outage{log: slog.New(slog.NewJSONHandler(&buf, nil))}
	resumed := time.Now()
	defer mono.NoteStall(resumed.Add(-15*time.Second), resumed)()
	o.tell(zk.StateDisconnected, 1, 1, 0)
	o.ends("connected", 1, 2)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for _, l := range lines {
		t.Log(l)
	}
	for i, l := range lines {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		stalled, _ := line["stalled_for"].(float64) // slog's JSON: ns
		if time.Duration(stalled) != 15*time.Second {
			t.Errorf("line %d: stalled_for %v, want 15s", i, time.Duration(stalled))
		}
		if after, ok := line["after"].(float64); i == 1 && (!ok || time.Duration(after) < 15*time.Second) {
			t.Errorf("the outage's end: after=%v, want at least the stall's 15s", time.Duration(after))
		}
	}
}
