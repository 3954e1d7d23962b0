package wire_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/wire"
	"github.com/tierlock/tierlock/zklock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// Every request a go-zookeeper connection writes is counted under its
// kind, the connect request is not, and the granted session timeout is
// read from the connect response: 10s asked, 10s granted by the servers
// the project starts.
func TestCountsByOpcode(t *testing.T) {
	c := wire.New()
	conn, _, err := zk.Connect(zktest.Servers(t), 10*time.Second, zk.WithDialer(c.Dialer()),
		zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p := zktest.Path(t)
	acl := zk.WorldACL(zk.PermAll)
	for i := 1; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		if _, err := conn.Create(p[:i], nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err) // the parents of p
		}
	}
	before := c.Counts()
	if _, err := conn.Create(p, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = conn.Children(p)
	must(err)
	_, _, err = conn.Get(p)
	must(err)
	_, _, err = conn.Exists(p)
	must(err)
	_, _, err = conn.Exists(p)
	must(err)
	_, err = conn.Sync(p)
	must(err)
	_, err = conn.Multi(&zk.CreateRequest{Path: p + "/a", Acl: acl}, &zk.DeleteRequest{Path: p + "/a", Version: -1})
	must(err)
	must(conn.Delete(p, -1))
	got := c.Counts().Sub(before)
	got.Ping = 0 // one may fall in between
	want := proto.OpCounts{Create: 1, GetChildren: 1, GetData: 1, Exists: 2, Sync: 1, Multi: 1, Delete: 1}
	if got != want {
		t.Errorf("counted %+v, want %+v", got, want)
	}
	if got.Total() != 8 {
		t.Errorf("Total = %d, want 8", got.Total())
	}
	if c.Connections() != 1 {
		t.Errorf("%d connections, want 1", c.Connections())
	}
	if _, ext := zkserver.FromEnv(); !ext && c.Timeout() != 10*time.Second {
		t.Errorf("negotiated timeout %v, want the 10s asked for", c.Timeout())
	}
}

// A zklock session opened through the dialer is counted too (the session
// still taps its connection), and its negotiated timeout is read.
func TestZklockSession(t *testing.T) {
	c := wire.New()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := zklock.Connect(ctx, zktest.Servers(t), zklock.WithDialer(c.Dialer()),
		zklock.WithSessionTimeout(6*time.Second), zklock.WithLogger(zktest.QuietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := zklock.New(s, zktest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	before := c.Counts()
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	got := c.Counts().Sub(before)
	if got.Create+got.Multi < 1 || got.Total() < 2 {
		t.Errorf("an acquisition and a release counted as %+v", got)
	}
	if _, ext := zkserver.FromEnv(); !ext && c.Timeout() != 6*time.Second {
		t.Errorf("negotiated timeout %v, want 6s", c.Timeout())
	}
}

func TestOpCounts(t *testing.T) {
	a := proto.OpCounts{Create: 3, Ping: 2, Other: 1}
	b := proto.OpCounts{Create: 1, Delete: 4}
	if s := a.Add(b); s != (proto.OpCounts{Create: 4, Delete: 4, Ping: 2, Other: 1}) || s.Total() != 11 {
		t.Errorf("Add = %+v", s)
	}
	if d := a.Sub(b); d != (proto.OpCounts{Create: 2, Delete: -4, Ping: 2, Other: 1}) {
		t.Errorf("Sub = %+v", d)
	}
	if len(proto.OpNames) != len(a.Values()) {
		t.Errorf("%d names for %d values", len(proto.OpNames), len(a.Values()))
	}
}
