package zkserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
)

// TestClockOffset: a server started under libfaketime, 2 s ahead of the
// host and 2 s behind, dates a znode's mtime by its own clock (the JVM
// honours the preloaded library), and its monotonic clock is the host's
// (a session is granted and kept).
func TestClockOffset(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a server under a shifted clock, about 2 s")
	}
	for _, off := range []time.Duration{2 * time.Second, -2 * time.Second} {
		t.Run(off.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			c, err := zkserver.Start(ctx, zkserver.WithClockOffset(off))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conn := dial(t, c.Addrs())
			before := time.Now()
			if _, err := conn.Create("/clock", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			_, stat, err := conn.Get("/clock")
			if err != nil {
				t.Fatal(err)
			}
			mtime := time.UnixMilli(stat.Mtime)
			if lo, hi := before.Add(off-time.Millisecond), after.Add(off+time.Millisecond); mtime.Before(lo) || mtime.After(hi) {
				t.Errorf("mtime %v, want within [%v, %v]: the server's clock %v off the host's", mtime.Sub(before), off, after.Sub(before)+off, off)
			}
		})
	}
}
