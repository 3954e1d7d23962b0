package runonce_test

import (
	"errors"
	"flag"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// outage is how long TestOutageLogsTwoLines cuts ZooKeeper off (13 s in
// the report behind this test).
var outage = flag.Duration("outage", 6*time.Second, "TestOutageLogsTwoLines: how long ZooKeeper is unreachable")

// TestOutageLogsTwoLines: ZooKeeper unreachable for longer than the
// session (a partition of 6 s, -outage; sessions of 4 s) under 10 jobs
// ticking every 500 ms. The Runner says so in one line naming ZooKeeper
// and in one when it is back, with the runs skipped; it used to warn once
// per job and tick ("context deadline exceeded"). Every warning of the
// session is counted.
func TestOutageLogsTwoLines(t *testing.T) {
	if testing.Short() {
		t.Skip("a 6 s outage")
	}
	p, err := faultproxy.New(zktest.Servers(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, logs := logged(t, []string{p.Addr()}, zklock.WithSessionTimeout(4*time.Second))
	l, err := runonce.New(s, zktest.Path(t), runonce.WithWindow(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stop := tickJobs(l, 10, 500*time.Millisecond)
	defer stop()
	time.Sleep(1500 * time.Millisecond)
	p.Partition(*outage)
	time.Sleep(*outage)
	p.Heal()
	zktest.Eventually(t, 20*time.Second, "the Runner's line when ZooKeeper is back", func() bool {
		return strings.Contains(logs.String(), "ZooKeeper reachable again")
	})
	var warnings []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warnings = append(warnings, line)
		}
	}
	t.Logf("%d warnings over the outage:\n%s", len(warnings), strings.Join(warnings, "\n"))
	var ours int
	for _, w := range warnings {
		if strings.Contains(w, "component=runonce") {
			ours++
		}
	}
	if ours != 2 || !strings.Contains(logs.String(), "ZooKeeper unreachable") || !strings.Contains(logs.String(), "runs_skipped=") {
		t.Errorf("%d lines of the Runner's, want 2: ZooKeeper unreachable, and reachable again with the runs skipped", ours)
	}
	if len(warnings) > 6 {
		t.Errorf("%d warnings in all, want a handful", len(warnings))
	}
}

// TestSlowLocksAreNoOutage: Locks that time out while ZooKeeper answers
// every request (here: this process stalls between the run node's read,
// answered, and its write), interleaved with Locks that run, are no
// outage. The Runner logged "ZooKeeper unreachable" and "reachable again"
// at each turn: 20 lines for 20 Locks.
func TestSlowLocksAreNoOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ten claims past their lock timeout, about 7 s")
	}
	s, logs := logged(t, zktest.Servers(t))
	l, err := runonce.New(s, zktest.Path(t), runonce.WithWindow(time.Millisecond),
		runonce.WithLockTimeout(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var stall atomic.Bool
	defer runonce.SetAfterReadHook(func(string) {
		if stall.Load() {
			time.Sleep(500 * time.Millisecond)
		}
	})()
	ctx := zktest.Context(t, 30*time.Second)
	var ran, failed int
	for i := range 20 {
		stall.Store(i%2 == 1)
		time.Sleep(runonce.AfterWindow(time.Millisecond))
		if ok, err := runOnce(ctx, l, "job", nil); ok {
			ran++
		} else if !errors.Is(err, runonce.ErrSkipped) {
			failed++
		}
	}
	lines := runonceLines(logs.String())
	t.Logf("%d ran, %d failed; the Runner's %d lines:\n%s", ran, failed, len(lines), strings.Join(lines, "\n"))
	if ran < 8 || failed < 8 {
		t.Fatalf("%d ran and %d failed, want about 10 each", ran, failed)
	}
	if strings.Contains(logs.String(), "ZooKeeper unreachable") || len(lines) > 2 {
		t.Errorf("%d lines, an outage among them, where ZooKeeper answered every request: want at most 2, none of an outage", len(lines))
	}
}

// TestOutageFlapsLogTwoLines: ZooKeeper silent three
// times for a second, a second apart (the connection held, the session
// kept), under 5 jobs: one outage, two lines. Without hysteresis each
// return logged "reachable again" and each silence "unreachable".
func TestOutageFlapsLogTwoLines(t *testing.T) {
	if testing.Short() {
		t.Skip("about 12 s")
	}
	p, err := faultproxy.New(zktest.Servers(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, logs := logged(t, []string{p.Addr()}, zklock.WithSessionTimeout(10*time.Second))
	l, err := runonce.New(s, zktest.Path(t), runonce.WithWindow(50*time.Millisecond),
		runonce.WithLockTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stop := tickJobs(l, 5, 100*time.Millisecond)
	time.Sleep(time.Second)
	for range 3 {
		p.Pause()
		time.Sleep(time.Second)
		p.Resume()
		time.Sleep(time.Second)
	}
	time.Sleep(7 * time.Second)
	stop()
	lines := runonceLines(logs.String())
	t.Logf("the Runner's %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	// The outage's lines are two. Under load (the race detector, a busy
	// core) the jobs, every 100 ms with a 300-ms lock timeout, are truly
	// late, and the Runner truly says so ("overloaded", "job's tick late:
	// overload"): those lines may come too, never another outage line.
	var outage []string
	for _, line := range lines {
		switch {
		case strings.Contains(line, "reachable"):
			outage = append(outage, line)
		case !strings.Contains(line, "overload"):
			t.Errorf("a line neither of the outage nor of overload: %s", line)
		}
	}
	if len(outage) != 2 || !strings.Contains(outage[0], "ZooKeeper unreachable") || !strings.Contains(outage[1], "ZooKeeper reachable again") {
		t.Errorf("%d outage lines, want 2: unreachable, then reachable again", len(outage))
	}
}

// TestOutageFollowerCut: the session's server, a follower, cut from the
// ensemble's leader for 2.5 s, under its syncLimit, so that it keeps its
// clients and answers their pings: the session stays connected, and the
// first write that waits for the leader holds every later request of the
// session (they are served in order). That is an outage, two lines from
// the cut on, not overload. Before the cut the machine's own load may be
// told (jobs every 100 ms with a 300-ms lock timeout, under -race): a
// loaded make test logged "overloaded" 0.55 s before the cut, a true line
// about that machine; only overload lines, and the outage's first, may
// come before it.
func TestOutageFollowerCut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private ensemble")
	}
	zc := zktest.Ensemble(t, 3, zkserver.WithPeerProxies(), zkserver.WithSyncLimit(25))
	ctx := zktest.Context(t, 90*time.Second)
	leader, err := zc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % 3
	s, logs := logged(t, []string{zc.Addr(follower)}, zklock.WithSessionTimeout(10*time.Second))
	l, err := runonce.New(s, "/gocron-cut", runonce.WithWindow(50*time.Millisecond),
		runonce.WithLockTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stop := tickJobs(l, 5, 100*time.Millisecond)
	time.Sleep(time.Second)
	// The cut's times, beside the lines': a loaded make test once had
	// "overloaded" 0.85 s before "unreachable", and could not say whether
	// it came before the cut (the machine) or after it.
	cut := time.Now()
	t.Logf("cut at %s", cut.UTC().Format("15:04:05.000"))
	if err := zc.PartitionMember(follower); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if err := zc.HealMember(follower); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	t.Logf("healed at %s", healed.UTC().Format("15:04:05.000"))
	zktest.Eventually(t, 30*time.Second, "the Runner's line when ZooKeeper is back", func() bool {
		return strings.Contains(logs.String(), "ZooKeeper reachable again")
	})
	stop()
	lines := runonceLines(logs.String())
	t.Logf("the Runner's %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	var outage []string
	for _, line := range lines {
		switch {
		case strings.Contains(line, "reachable"):
			outage = append(outage, line)
		case !loggedBefore(t, line, cut) || !strings.Contains(line, "overload"):
			t.Errorf("a line neither of the outage nor, before the cut, of overload: %s", line)
		}
	}
	// The outage's first line may come before the cut, and truly: a loaded
	// make test's ensemble once answered none of the Runner's requests for
	// the lock timeout 0.5 s before it ("ZooKeeper unreachable", then one
	// return that did not last, and the cut within the settling: one
	// outage, told once). Its end must come after the heal.
	if len(outage) != 2 || !strings.Contains(outage[0], "ZooKeeper unreachable") || !strings.Contains(outage[1], "ZooKeeper reachable again") ||
		loggedBefore(t, outage[1], healed) {
		t.Errorf("%d outage lines, want 2: unreachable, then reachable again after the heal", len(outage))
	}
}

// loggedBefore reports whether a slog text line's time= is before at.
func loggedBefore(t *testing.T, line string, at time.Time) bool {
	t.Helper()
	v, ok := strings.CutPrefix(line, "time=")
	if !ok {
		t.Fatalf("a line without its time: %s", line)
	}
	v, _, _ = strings.Cut(v, " ")
	logged, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatalf("a line's time: %v", err)
	}
	return logged.Before(at)
}
