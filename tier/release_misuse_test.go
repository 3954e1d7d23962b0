package tier_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// misuseCase is one kind of lock or registry under the Release tests: take
// acquires with the wait context, held reports how many Acquires the held
// context still holds, and name is what the warning must name (the lock
// path, or the registry root).
type misuseCase struct {
	kind    string
	name    string
	take    func(wait context.Context) (context.Context, error)
	release func(ctx context.Context) error
	held    func(held context.Context) int
	close   func() error
}

// misuseCases returns one case per Release of package tier, each on a lock
// or registry of its own on session s.
func misuseCases(t *testing.T, s *zklock.Session) []misuseCase {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var cases []misuseCase
	add := func(kind, name string, take func(context.Context) (context.Context, error),
		release func(context.Context) error, held func(context.Context) int, closeFn func() error) {
		t.Cleanup(func() { closeFn() })
		cases = append(cases, misuseCase{kind, name, take, release, held, closeFn})
	}
	for _, write := range []bool{true, false} {
		kind := map[bool]string{true: "write", false: "read"}[write]

		rwPath := zktest.Path(t) + "-rw-" + kind
		rw, err := tier.NewRWLock(s, rwPath)
		must(err)
		take := rw.RLock
		if write {
			take = rw.Lock
		}
		add("RWLock/"+kind, rwPath, take, rw.Release, rw.HoldCount, rw.Close)

		rwRoot := zktest.Path(t) + "-rwreg-" + kind
		rwReg, err := tier.NewRWRegistry(s, rwRoot)
		must(err)
		add("RWRegistry/"+kind, rwRoot, func(ctx context.Context) (context.Context, error) {
			if write {
				return rwReg.Lock(ctx, "job")
			}
			return rwReg.RLock(ctx, "job")
		}, rwReg.Release, rwReg.HoldCount, rwReg.Close)
	}
	lockPath := zktest.Path(t) + "-lock"
	l, err := tier.New(s, lockPath)
	must(err)
	add("Lock", lockPath, l.Acquire, l.Release, l.HoldCount, l.Close)

	semPath := zktest.Path(t) + "-sem"
	sem, err := tier.NewSemaphore(s, semPath, 2)
	must(err)
	add("Semaphore", semPath, func(ctx context.Context) (context.Context, error) { return sem.Acquire(ctx, 1) },
		sem.Release, sem.Permits, sem.Close)

	regRoot := zktest.Path(t) + "-reg"
	reg, err := tier.NewRegistry(s, regRoot)
	must(err)
	add("Registry", regRoot, func(ctx context.Context) (context.Context, error) { return reg.Acquire(ctx, "job") },
		reg.Release, reg.HoldCount, reg.Close)

	semRoot := zktest.Path(t) + "-semreg"
	semReg, err := tier.NewSemaphoreRegistry(s, semRoot, 2)
	must(err)
	add("SemaphoreRegistry", semRoot, func(ctx context.Context) (context.Context, error) { return semReg.Acquire(ctx, "job", 1) },
		semReg.Release, semReg.HoldCount, semReg.Close)
	return cases
}

// warnings returns the lines of log at level WARN that contain name.
func warnings(log *zktest.SyncBuffer, name string) []string {
	var out []string
	for line := range strings.Lines(log.String()) {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, name) {
			out = append(out, line)
		}
	}
	return out
}

// loggedSession connects a session whose logger writes text to the
// returned buffer, down to Debug.
func loggedSession(t *testing.T) (*zklock.Session, *zktest.SyncBuffer) {
	t.Helper()
	var buf zktest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return connect(t, zktest.Servers(t), zklock.WithLogger(logger)), &buf
}

// Issue 31, seam 1: Release given the wait context, not the held one
// Acquire returned, releases nothing (the wait context may be shared: the
// hold is someone's) and returns ErrNotHolder, which `defer Release(...)`
// drops; so it also logs one warning, naming the lock's path (or the
// registry's root) and what to pass instead. The hold stays, and the held
// context still releases it. Before the fix nothing was logged.
func TestReleaseWaitContextWarns(t *testing.T) {
	s, log := loggedSession(t)
	for _, c := range misuseCases(t, s) {
		t.Run(c.kind, func(t *testing.T) {
			wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			held, err := c.take(wait)
			if err != nil {
				t.Fatal(err)
			}
			before := len(warnings(log, c.name))
			if err := c.release(wait); !errors.Is(err, tier.ErrNotHolder) {
				t.Errorf("Release(wait) = %v, want ErrNotHolder", err)
			}
			got := warnings(log, c.name)[before:]
			if len(got) != 1 {
				t.Fatalf("Release(wait) logged %d warnings naming %s, want 1:\n%s", len(got), c.name, log)
			}
			t.Logf("the warning: %s", got[0])
			if !strings.Contains(got[0], "pass the context") || !strings.Contains(got[0], "returned") {
				t.Errorf("the warning does not say what to pass instead: %s", got[0])
			}
			if !strings.Contains(got[0], "caller=") || !strings.Contains(got[0], "release_misuse_test.go:") {
				t.Errorf("the warning does not say where the Release is: %s", got[0])
			}
			if n := c.held(held); n < 1 {
				t.Errorf("the hold is gone after Release(wait): count %d", n)
			}
			if err := c.release(held); err != nil {
				t.Fatalf("Release(held) = %v", err)
			}
			if n := len(warnings(log, c.name)); n != before+1 {
				t.Errorf("Release(held) warned:\n%s", log)
			}
		})
	}
}

// The legitimate ErrNotHolder and ErrClosed cases stay quiet: a second
// Release of a held context (its count exhausted), and a Release of a held
// context after Close, return their errors and log no warning.
func TestReleaseTwiceOrAfterCloseQuiet(t *testing.T) {
	s, log := loggedSession(t)
	for _, c := range misuseCases(t, s) {
		t.Run(c.kind, func(t *testing.T) {
			ctx := ctxT(t, 10*time.Second)
			held, err := c.take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			before := len(warnings(log, c.name))
			if err := c.release(held); err != nil {
				t.Fatal(err)
			}
			if err := c.release(held); !errors.Is(err, tier.ErrNotHolder) {
				t.Errorf("second Release = %v, want ErrNotHolder", err)
			}
			if held, err = c.take(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.close(); err != nil {
				t.Fatal(err)
			}
			if err := c.release(held); !errors.Is(err, tier.ErrClosed) {
				t.Errorf("Release after Close = %v, want ErrClosed", err)
			}
			if got := warnings(log, c.name)[before:]; len(got) != 0 {
				t.Errorf("warned:\n%s", strings.Join(got, ""))
			}
		})
	}
}
