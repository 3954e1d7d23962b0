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
)

// The write path explored schedule by schedule (world_test.go,
// sched_test.go): random programs of creates, deletes and transactions
// from a few callers, answers, refusals, unknown outcomes, drops, new
// sessions, ctx ends at any step, Close, each schedule from a seed. A
// failing schedule prints its seed and its events, shrunk, and the
// command that replays it.

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
	wg.Wait()
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
