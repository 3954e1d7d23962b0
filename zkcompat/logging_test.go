package zkcompat_test

import (
	"log/slog"
	"testing"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// The drop-in is as quiet as zk.Lock by default: 50 Lock/Unlock pairs
// write nothing to slog.Default() (its sessions log warnings only); with
// SetLogger, the session's state changes are logged there.
func TestQuietByDefault(t *testing.T) {
	var buf zktest.SyncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	zkcompat.SetLogger(nil)
	defer zkcompat.SetLogger(zktest.QuietLog)

	c := conn(t)
	l := zkcompat.NewLock(c, zktest.Path(t), acl)
	for i := 0; i < 50; i++ {
		if err := l.Lock(); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	zkcompat.CloseConn(c)
	if out := buf.String(); out != "" {
		t.Errorf("default logging wrote:\n%s", out)
	}

	var verbose zktest.SyncBuffer
	zkcompat.SetLogger(slog.New(slog.NewTextHandler(&verbose, &slog.HandlerOptions{Level: slog.LevelDebug})))
	c = conn(t)
	l = zkcompat.NewLock(c, zktest.Path(t), acl)
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	zkcompat.CloseConn(c)
	if verbose.String() == "" {
		t.Error("SetLogger's logger got nothing")
	}
}
