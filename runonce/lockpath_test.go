package runonce_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// A job's lock path stays between its ticks, however far apart: it is
// made persistent, as its run node is, and RemoveJob deletes it. Made a
// container (the lock's default, the first run taking the lock before it
// writes the job's nodes), the server reaped it once its last node had
// gone, at its next container check (a minute by default): each tick of a
// job once a minute then made it again, a create refused and a
// container's create more before its lock, two writes on the disk, and
// the fleet's fire to run 2.6x an every-second job's (docs/cron.md). The
// server here checks every 100 ms.
func TestLockPathKeptBetweenTicks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own")
	}
	c := zktest.Ensemble(t, 1, zkserver.WithContainerCheck(100*time.Millisecond))
	ctx := zktest.Context(t, time.Minute)
	s, err := zklock.Connect(ctx, c.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	root := zktest.Path(t)
	r, err := runonce.New(s, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if err := r.Do(ctx, "job", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // ten container checks, the lock's node long deleted
	for _, p := range []string{root + "/job/lock", root + "/job/run"} {
		ok, _, err := s.Conn().Exists(p)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("%s gone a second after the job's run: the server reaped it", p)
		}
	}
}
