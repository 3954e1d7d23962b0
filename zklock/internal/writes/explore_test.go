package writes_test

import (
	"flag"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The write path explored schedule by schedule (world_test.go,
// sched_test.go): random programs of a few callers, each schedule from a
// seed; a failing schedule prints its seed and its events, shrunk, and the
// command that replays it. The callers (callers_test.go) do what zklock's
// locks do through the package's calls alone: lock callers create their
// path's node (protection mode after an unknown outcome, the parents made
// after NoNode), run transactions guarded by it (stale ones among them),
// release it with a delete handler, and again; transaction callers run the
// session's transactions; any wait may end (GiveUp, Await's steps). Each
// seed also draws the configuration: MaxOps 2 to 6, MaxApart 1 to 3, one
// write a request (1 in 10), the owner's connection (KeepDeletesOnClose, 1
// in 3), MaxBytes of a few hundred bytes (1 in 2: ACLs and data of random
// size, some writes too large alone), a session without a tap (1 in 8:
// Written is never called, Sent closes at the answer).
//
// The faults it injects, at any step, within each schedule's budget:
//
//	scheduling   any order of the write path's goroutines, of the requests
//	             of one round on the wire, of writes, applications and
//	             answers
//	dc:B         the connection drops: each written request not yet applied
//	             is applied first or never (B); those written fail without
//	             results; those not written go out on the next connection
//	rc, rn       back in the same session, or a new one (the old one's
//	             ephemeral nodes gone)
//	xp           down, the client learns its session expired: SessionID
//	             says 0 until the new session
//	ex:B         a drop with requests handed and unwritten, back at once in
//	             a new session: they go out in it, sealed in the old one
//	cl:B         the Session's Close: its own connection closed (B, and the
//	             unwritten fail unsent), or its owner's kept
//	xN           caller N's ctx ends, wherever it waits
//	odN, rpN     an operator deletes a lock node; a container path reaped
//	dnN          an ACL refuses deletes on a lock path (lifted at the end)
//	fl, tm       Flush; the FoldWait timer fires
//
// What it checks, and on which side (the server, the double, as it applies
// each request; the caller, as each call returns: a create's or a
// transaction's Result, Await's answer on giving up, GiveUp's fate, the
// writes Close ended; the handler, as each released node's delete tells
// its handler; the writer, on the rounds it sends and at the end), against
// the history the double recorded (check_test.go, told_test.go):
//
//	(a) server   one node per path and session: no create applied before
//	             its path's released node's delete (nodes of creates of
//	             unknown outcome or owner, and of deletes handed over,
//	             aside)
//	(b) caller   told refused: at its own op, with the error the server
//	             gave that op, the first failing of its request
//	(c) writer   no write stranded: once the faults stop every write ends,
//	             the queue empties, no node of the session is left, every
//	             place lent to a create is given back
//	(d) server   the writes of one path are applied in the order queued
//	(e) server   never applied after its caller was told it was not
//	    caller   told not applied (refused, withdrawn, closed, too large,
//	             taken back): not applied so far, and its write ended so
//	(f) server   applied at most once
//	(g) server   an unknown outcome is never applied after its caller's
//	             read-back
//	(h) writer   a refused batch's other writes go again together in the
//	             next request; a round has at most MaxApart requests
//	(i) handler  told once, and only the delete's own outcome: nil once its
//	             request removed the node; the session's close once
//	             closed; that its node went with its session once that
//	             session is over (never then plain zk.ErrNoNode); else its
//	             own op's error, or its own request's
//	(j) caller   told applied: its request was applied, with the results
//	             told, in the session told
//	(k) caller   told unknown as it gives up: only once the request that
//	             carries the write is written (or the write is over)
//	(l) server   no request over MaxBytes (counted by jute's rules here,
//	             apart from size.go); caller: told too large only of a
//	             write larger alone, never sent
//	(m) caller   told with its cause: withdrawn, its own ctx's error;
//	             closed, the session's error (Conn.Closed)
//
// Each check refuses a seeded bug (mutants_test.go). TestExplore also
// counts the moments the checks are about (cover_test.go) and fails if
// one was never reached.

var (
	schedules = flag.Int("explore.schedules", 100000, "schedules TestExplore runs")
	firstSeed = flag.Uint64("explore.seed", 1, "the first seed TestExplore runs; the seed TestExploreReplay replays")
	steps     = flag.Int("explore.steps", 300, "random events a schedule takes before it settles")
	events    = flag.String("explore.events", "", "TestExploreReplay: the events to replay (comma-separated); empty: the seed's own schedule")
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestExplore runs -explore.schedules schedules, from -explore.seed on, on
// every core, and fails on the first broken property, with its replay.
func TestExplore(t *testing.T) {
	n := uint64(*schedules)
	if (testing.Short() || raceBuild) && !flagSet("explore.schedules") {
		n = min(n, 10000)
	}
	start := time.Now()
	var next atomic.Uint64
	var mu sync.Mutex
	var failed *failure
	var wg sync.WaitGroup
	var done atomic.Uint64
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				mu.Lock()
				stop := failed != nil && failed.seed < *firstSeed+i
				mu.Unlock()
				if i >= n || stop {
					return
				}
				seed := *firstSeed + i
				evs, fails, _ := explore(seed, *steps, false)
				done.Add(1)
				if len(fails) > 0 {
					mu.Lock()
					if failed == nil || seed < failed.seed {
						failed = &failure{seed: seed, events: evs, failures: fails}
					}
					mu.Unlock()
				}
			}
		}()
	}
	zktest.WaitProgress(t, "the explorers' schedules", &wg, done.Load)
	if failed != nil {
		t.Fatal(failed.report())
	}
	t.Logf("%d schedules, no property broken, in %v", n, time.Since(start).Round(time.Millisecond))
	missing, counts := uncovered()
	t.Logf("moments reached: %s", counts)
	if n >= 10000 && len(missing) > 0 {
		t.Errorf("no schedule reached: %s", strings.Join(missing, "; "))
	}
}

// failure is a failing schedule.
type failure struct {
	seed     uint64
	events   []string
	failures []string
}

// report shrinks f and says how to replay it.
func (f *failure) report() string {
	prop := property(f.failures[0])
	shrunk := shrink(f.seed, f.events, prop)
	fails, log := replay(f.seed, shrunk, true)
	var b strings.Builder
	b.WriteString("seed " + itoa(f.seed) + ": " + f.failures[0] + "\n")
	b.WriteString("shrunk from " + itoa(uint64(len(f.events))) + " to " + itoa(uint64(len(shrunk))) + " events; replay:\n")
	b.WriteString("  go test ./zklock/internal/writes -run TestExploreReplay -explore.seed=" + itoa(f.seed) +
		" -explore.events=" + fmtEvents(shrunk) + "\n")
	if len(fails) > 0 {
		b.WriteString("the shrunk schedule: " + fails[0] + "\n")
	}
	for _, l := range log {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// TestExploreReplay replays one schedule with its log: -explore.seed's own,
// or -explore.events.
func TestExploreReplay(t *testing.T) {
	if !flagSet("explore.seed") {
		t.Skip("replays the schedule of -explore.seed (with -explore.events)")
	}
	evs, fails, log := explore(*firstSeed, *steps, true)
	if *events != "" {
		evs = strings.Split(*events, ",")
		fails, log = replay(*firstSeed, evs, true)
	}
	for _, l := range log {
		t.Log(l)
	}
	if len(fails) > 0 {
		t.Fatalf("seed %d, %d events: %s", *firstSeed, len(evs), strings.Join(fails, "; "))
	}
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestExploreDeterministic: a schedule replayed from its events does what
// it did, step for step (the log), so that a failing seed replays.
func TestExploreDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		evs, fails, log := explore(seed, *steps, true)
		refails, relog := replay(seed, evs, true)
		if strings.Join(log, "\n") != strings.Join(relog, "\n") || len(fails) != len(refails) {
			t.Fatalf("seed %d: the replay differs from the run (%d and %d lines of log)", seed, len(log), len(relog))
		}
	}
}
