package zklock_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// TestConnInternals pins what a session made by NewSession reads from the
// caller's connection (conninfo.go): should a go-zookeeper upgrade rename
// or retype those fields, this fails instead of the loss bounds silently
// falling back to a timeout the server may not have granted.
func TestConnInternals(t *testing.T) {
	servers := zktest.Servers(t)
	for _, asked := range []time.Duration{3 * time.Second, 10 * time.Minute} {
		conn, _, err := zk.Connect(servers, asked, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "a session", func() bool { return conn.State() == zk.StateHasSession })
		got := zklock.GrantedTimeout(conn)
		switch {
		case got <= 0:
			t.Errorf("asked %v: the granted timeout cannot be read from the connection", asked)
		case asked == 3*time.Second && got != asked:
			t.Errorf("asked %v: read %v; the server grants what is asked within its bounds", asked, got)
		case asked > 3*time.Second && got >= asked:
			t.Errorf("asked %v: read %v; the server's bound (at most minutes) must clamp it", asked, got)
		}
		t.Logf("asked %v, granted %v", asked, got)
		quit := zklock.ConnQuit(conn)
		if quit == nil {
			t.Fatal("the connection's closing signal cannot be read")
		}
		if zktest.IsClosed(quit) {
			t.Error("closing signal closed on a live connection")
		}
		conn.Close()
		if !zktest.IsClosed(quit) {
			t.Error("closing signal still open after Close")
		}
	}
}
