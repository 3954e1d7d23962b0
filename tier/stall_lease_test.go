package tier_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// A tier hold whose lease ran out while the process was stopped (a stop
// longer than the 2-s session: mono.Jump moves the clock the lease is
// judged by 15 s, and the runtime's timers, which do not see it, stand for
// the timers a resumed process has not run yet) is lost to whatever its
// holder asks first on resuming: the held context's cause and Err, its
// Done, the token a fenced write would carry, a guarded write, and
// Release; after it, Release returns the loss. (A re-entry counts without
// a look at the clock, which would cost more than a re-entry may.) The worker pool
// of the report asked its job's timer, then Release: nil, its jobs run on
// under a lock another copy held.
//
// On the code before, each question read what had been told, and nothing
// had: Cause and Err were nil, Done open, the token given, the guarded write applied by the server (the node still
// existed), and Release returned nil.
func TestStalledHoldLostToEveryQuestion(t *testing.T) {
	servers := zktest.Servers(t)
	firsts := []string{"Cause", "Err", "Done", "Token", "Txn", "Release"}
	for _, first := range firsts {
		t.Run(first, func(t *testing.T) {
			buf := &zktest.SyncBuffer{}
			log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
			s := connect(t, servers, zklock.WithSessionTimeout(2*time.Second), zklock.WithLogger(log))
			l := newLock(t, s, zktest.Path(t))
			held, err := l.Acquire(ctxT(t, 30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			back := mono.Jump(15 * time.Second)
			defer back()
			var got error
			switch first {
			case "Cause":
				got = context.Cause(held)
			case "Err":
				if held.Err() != nil {
					got = context.Cause(held)
				}
			case "Done":
				select {
				case <-held.Done():
					got = context.Cause(held)
				default:
				}
			case "Token":
				_, got = l.Token(held)
			case "Txn":
				_, got = l.Txn(held)
			case "Release":
				got = l.Release(held)
			}
			if !errors.Is(got, tier.ErrLockLost) || !errors.Is(got, zklock.ErrLeaseExpired) {
				t.Errorf("%s first after the stall: %v; want ErrLockLost wrapping ErrLeaseExpired", first, got)
			}
			if first != "Release" {
				if err := l.Release(held); !errors.Is(err, tier.ErrLockLost) {
					t.Errorf("Release after %s: %v; want ErrLockLost", first, err)
				}
			}
			lapses := 0
			for _, line := range strings.Split(buf.String(), "\n") {
				if strings.Contains(line, `"msg":"session not confirmed with the leader in time`) {
					lapses++
					if !strings.Contains(line, `"holds_ended":1`) || !strings.Contains(line, `"stalled_for":1`) {
						t.Errorf("the lapse's line says neither the hold it ended nor the stall: %s", line)
					}
				}
			}
			if lapses != 1 {
				t.Errorf("the lapse told %d times; want once:\n%s", lapses, buf)
			}
		})
	}
}

// The recipes' holds are judged the same way: a write and a read hold of
// an RWLock (and a read hold a downgrade moved to the read node) and a
// Semaphore's, asked their token first after the stop
// (the clock jumped 15 s past a 2-s session), are told the loss, a
// MultiLock's held context its cause, and so is their Release. On the code
// before, each gave its token, the multi-lock's cause was nil, and Release
// returned nil.
func TestStalledRecipeHoldsLost(t *testing.T) {
	servers := zktest.Servers(t)
	type recipe struct {
		token   func(context.Context) (int64, error)
		release func(context.Context) error
	}
	for _, name := range []string{"write", "read", "downgraded", "semaphore", "multi"} {
		t.Run(name, func(t *testing.T) {
			s := connect(t, servers, zklock.WithSessionTimeout(2*time.Second), zklock.WithLogger(quietLog))
			ctx := ctxT(t, 30*time.Second)
			var r recipe
			var held context.Context
			var err error
			switch name {
			case "write", "read", "downgraded":
				rw, err := tier.NewRWLock(s, zktest.Path(t))
				if err != nil {
					t.Fatal(err)
				}
				defer rw.Close()
				r = recipe{rw.Token, rw.Release}
				if name == "read" {
					held, err = rw.RLock(ctx)
				} else {
					held, err = rw.Lock(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
				if name == "downgraded" {
					// A read hold under the write hold, moved to the
					// read node as the write hold is released.
					w := held
					if held, err = rw.RLock(w); err != nil {
						t.Fatal(err)
					}
					if err := rw.Release(w); err != nil {
						t.Fatal(err)
					}
				}
			case "semaphore":
				sem, err := tier.NewSemaphore(s, zktest.Path(t), 2)
				if err != nil {
					t.Fatal(err)
				}
				defer sem.Close()
				r = recipe{sem.Token, sem.Release}
				if held, err = sem.Acquire(ctx, 1); err != nil {
					t.Fatal(err)
				}
			case "multi":
				a, b := newLock(t, s, zktest.Path(t)+"/a"), newLock(t, s, zktest.Path(t)+"/b")
				ml, err := tier.NewMultiLock(a, b)
				if err != nil {
					t.Fatal(err)
				}
				r = recipe{release: ml.Release}
				if held, err = ml.Acquire(ctx); err != nil {
					t.Fatal(err)
				}
			}
			back := mono.Jump(15 * time.Second)
			defer back()
			if name == "multi" {
				// Its held context is judged by its members'.
				if err := context.Cause(held); !errors.Is(err, tier.ErrLockLost) || !errors.Is(err, zklock.ErrLeaseExpired) {
					t.Errorf("Cause after the stall: %v; want the lease's loss", err)
				}
			} else if _, err = r.token(held); !errors.Is(err, tier.ErrLockLost) || !errors.Is(err, zklock.ErrLeaseExpired) {
				t.Errorf("Token after the stall: %v; want the lease's loss", err)
			}
			if err := r.release(held); !errors.Is(err, tier.ErrLockLost) {
				t.Errorf("Release after the stall: %v; want ErrLockLost", err)
			}
		})
	}
}
