package zklock_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// logLines decodes the JSON lines of buf whose message starts with one of
// prefixes.
func logLines(t *testing.T, buf *zktest.SyncBuffer, prefixes ...string) []map[string]any {
	t.Helper()
	return linesOf(buf.String(), prefixes...)
}

// linesOf decodes the JSON lines of text whose message starts with one of
// prefixes.
func linesOf(text string, prefixes ...string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var m map[string]any
		if line == "" || json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		msg, _ := m["msg"].(string)
		for _, p := range prefixes {
			if strings.HasPrefix(msg, p) {
				out = append(out, m)
			}
		}
	}
	return out
}

// An outage of the session's connection is told twice at Warn, however
// many locks the session holds: once when it begins (the holds it ended),
// once when it ends, with how long it lasted, what it cost and whether the
// session survived it. The old code logged "cannot reach ZooKeeper" once,
// at the first failed dial, and nothing when the server answered again:
// the log ended on a warning that was no longer true.
func TestOutageToldWhenItBeginsAndEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an outage through a proxy, about 11 s")
	}
	for _, long := range []bool{false, true} {
		name := map[bool]string{false: "SameSession", true: "NewSession"}[long]
		t.Run(name, func(t *testing.T) {
			const timeout = 2 * time.Second
			servers := zktest.Servers(t)
			px := proxyTo(t, servers[0])
			buf := &zktest.SyncBuffer{}
			log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
			s := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(timeout), zklock.WithLogger(log))
			ctx := ctxT(t, 30*time.Second)
			for range 3 {
				if _, err := newLock(t, s, zktest.Path(t)+"/"+name).Acquire(ctx); err != nil {
					t.Fatal(err)
				}
				// One lock per path: the three holds are the session's.
			}
			cut := 800 * time.Millisecond
			if long {
				cut = 3 * timeout // the server expires the session meanwhile
			}
			// What the log says from the cut on: a connection closed before
			// the session was made is an outage of its own, told as one
			// (TestOutageBeforeTheFirstSession), which a loaded make test met.
			from := len(buf.String())
			since := func() string { return buf.String()[from:] }
			px.Partition(cut)
			time.Sleep(cut)
			px.Heal()
			zktest.Eventually(t, 15*time.Second, "the outage's end told", func() bool {
				return len(linesOf(since(), "connected to ZooKeeper")) > 0
			})
			time.Sleep(200 * time.Millisecond) // a second line, were there one
			begun := linesOf(since(), "no connection to ZooKeeper")
			ended := linesOf(since(), "connected to ZooKeeper")
			if len(begun) != 1 || len(ended) != 1 {
				t.Fatalf("outage told %d times begun and %d times ended, want once each:\n%s", len(begun), len(ended), buf)
			}
			if got := begun[0]["holds_ended"]; got != float64(3) {
				t.Errorf("begin line: holds_ended %v, want 3: %v", got, begun[0])
			}
			after, _ := ended[0]["after"].(float64) // slog's JSON: nanoseconds
			if time.Duration(after) < cut/2 {
				t.Errorf("end line: after %v, want about %v", time.Duration(after), cut)
			}
			msg := ended[0]["msg"].(string)
			if long != strings.Contains(msg, "new session") || ended[0]["level"] != "WARN" {
				t.Errorf("end line %q at %v: new session told %v, want %v", msg, ended[0]["level"], !long, long)
			}
			if lines := logLines(t, buf, "cannot reach"); len(lines) != 0 {
				t.Errorf("dial failures at Warn: %v", lines)
			}
		})
	}
}

// A Connect whose first dials fail tells the outage when the first one
// fails and its end when the session is made; so does one whose first
// connections are closed before a session; a Close during an outage ends
// it too.
func TestOutageBeforeTheFirstSession(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an outage through a proxy, about 4 s")
	}
	servers := zktest.Servers(t)
	for _, refused := range []bool{true, false} {
		name := map[bool]string{true: "DialRefused", false: "ClosedBeforeASession"}[refused]
		t.Run(name, func(t *testing.T) {
			buf := &zktest.SyncBuffer{}
			log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
			addr := freeAddr(t)
			var px *faultproxy.Proxy
			if !refused {
				px = proxyAt(t, servers[0], addr)
				px.Partition(0)
			}
			up := make(chan *faultproxy.Proxy, 1)
			go func() {
				time.Sleep(1500 * time.Millisecond)
				if refused {
					up <- proxyAt(t, servers[0], addr) // nothing listened on addr until now
				} else {
					px.Heal()
					up <- px
				}
			}()
			s := connect(t, []string{addr}, zklock.WithLogger(log))
			px = <-up
			begun := logLines(t, buf, "no connection to ZooKeeper")
			ended := logLines(t, buf, "connected to ZooKeeper")
			if len(begun) != 1 || len(ended) != 1 {
				t.Fatalf("first connect: begun %v, ended %v", begun, ended)
			}
			if refused && (ended[0]["failed_dials"].(float64) < 1 || !strings.Contains(ended[0]["last_dial_error"].(string), "refused")) {
				t.Fatalf("first connect: begun %v, ended %v", begun, ended)
			}
			px.Partition(0)
			zktest.Eventually(t, 10*time.Second, "the outage told", func() bool {
				return len(logLines(t, buf, "no connection to ZooKeeper")) == 2
			})
			s.Close()
			if ended := logLines(t, buf, "no connection to ZooKeeper until the session was closed"); len(ended) != 1 {
				t.Fatalf("closed during an outage: %s", buf)
			}
		})
	}
}

// Connect returns after the log says its session is established, however
// slow the log's sink: what the program logs next comes after it. Found as
// a flake of TestOutageBeforeTheFirstSession in a loaded make test (the
// end line written just after Connect returned); the sink here, slow on
// that line, made the old code fail every time.
func TestConnectReturnsAfterItsLine(t *testing.T) {
	servers := zktest.Servers(t)
	buf := &zktest.SyncBuffer{}
	json := slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn})
	log := slog.New(slowOn{Handler: json, prefix: "connected to ZooKeeper", d: 300 * time.Millisecond})
	addr := freeAddr(t)
	go func() {
		time.Sleep(500 * time.Millisecond)
		proxyAt(t, servers[0], addr) // nothing listened on addr until now
	}()
	connect(t, []string{addr}, zklock.WithLogger(log))
	if ended := logLines(t, buf, "connected to ZooKeeper"); len(ended) != 1 {
		t.Fatalf("Connect returned before its session's line (begun %d, ended %d lines)",
			len(logLines(t, buf, "no connection to ZooKeeper")), len(ended))
	}
}

// slowOn is a log sink slow to write the lines that begin with prefix.
type slowOn struct {
	slog.Handler
	prefix string
	d      time.Duration
}

func (h slowOn) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		time.Sleep(h.d)
	}
	return h.Handler.Handle(ctx, r)
}

func (h slowOn) WithAttrs(as []slog.Attr) slog.Handler {
	return slowOn{Handler: h.Handler.WithAttrs(as), prefix: h.prefix, d: h.d}
}

func (h slowOn) WithGroup(name string) slog.Handler {
	return slowOn{Handler: h.Handler.WithGroup(name), prefix: h.prefix, d: h.d}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// proxyAt is a proxy to target listening on addr.
func proxyAt(t *testing.T, target, addr string) *faultproxy.Proxy {
	p, err := faultproxy.New(target, faultproxy.WithListenAddr(addr))
	if err != nil {
		t.Error(err)
		return nil
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// A lease that runs out while the connection stays up (the session's
// round trips grew too long to show the leader hears of it) is told when it
// ends too: the session keeps proving itself after the lapse, and the
// first proof that renews the lease says so, with how long the grants
// waited. The old code told the lapse alone. (With a 600 ms round trip and
// T = 2 s, go-zookeeper's pings keep the connection, 2T/3 = 1.33 s, while
// the lease's chains, three round trips long, cannot keep up.)
func TestLeaseLapseToldWhenItEnds(t *testing.T) {
	servers := zktest.Servers(t)
	px := proxyTo(t, servers[0])
	buf := &zktest.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(2*time.Second), zklock.WithLogger(log))
	h, err := newLock(t, s, zktest.Path(t)).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("logged:\n%s", buf)
		}
	}()
	px.SetLatency(300 * time.Millisecond)
	select {
	case <-h.Lost():
		if !errors.Is(h.Err(), zklock.ErrLeaseExpired) {
			t.Fatalf("the hold ended with %v; want the lease's lapse", h.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the hold outlived its lease")
	}
	px.SetLatency(0)
	zktest.Eventually(t, 10*time.Second, "the lapse's end told", func() bool {
		return len(logLines(t, buf, "session confirmed with the leader again")) == 1
	})
	if n := len(logLines(t, buf, "session not confirmed with the leader")); n != 1 {
		t.Fatalf("lapse told %d times", n)
	}
	if n := len(logLines(t, buf, "no connection to ZooKeeper")); n != 0 {
		t.Fatalf("the connection dropped: the scene is not a lapse while connected")
	}
}
