package runrec

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const w = 500 // ms

// node is a run node as a reader sees it: data, mtime, epoch.
type node struct {
	rec   Record
	mtime int64
	epoch int64
}

// write is an attempt: it reads n, writes its record, and its write gets
// mtime in epoch after delay ms from its Lock's entry. It returns the
// verdict and the node it leaves.
func (n node) write(by string, mtime, epoch, delay int64) (Verdict, node) {
	last := Derive(n.rec.Encode(), n.mtime, n.epoch<<32)
	r := Record{Last: last.At, LastBy: last.By, Runs: last.Runs, Window: w, Delay: delay,
		Prev: n.mtime, Epoch: n.epoch, By: by}
	return r.Verdict(mtime, epoch), node{r, mtime, epoch}
}

// ranAt is the node A left by running at 10,000 (epoch 1), its previous
// run a tick earlier.
var ranAt = node{Record{Last: 9000, Runs: 9, Window: w, Prev: 9300, Epoch: 1, By: "A"}, 10000, 1}

// TestReviewerClockBehind: A ran at 10,000; B, 150 ms later in the same
// tick, writes at 9,450 on a new leader whose clock is 700 ms behind. The
// old rule ran it again (elapsed -550 < -W). Now B rebases (the write is
// in another epoch), and the next tick runs.
func TestReviewerClockBehind(t *testing.T) {
	if v := ranAt.rec.Verdict(ranAt.mtime, ranAt.epoch); v != Run {
		t.Fatalf("A's write: %v, want Run", v)
	}
	v, after := ranAt.write("B", 9450, 2, 0)
	if v != Rebase {
		t.Fatalf("B at 9,450 on a new leader: %v, want Rebase", v)
	}
	if last := Derive(after.rec.Encode(), after.mtime, after.epoch<<32); last.At != 9450 || last.By != "A" || last.Runs != 10 {
		t.Errorf("after B's rebase: %+v, want at 9,450 (the new clock), by A, 10 runs", last)
	}
	// C, 300 ms after A: the same tick, skipped on the new clock.
	if v, _ := after.write("C", 9600, 2, 0); v != Skip {
		t.Errorf("C in the same tick: %v, want Skip", v)
	}
	// The next tick, a second after A (9,300 on the new clock).
	if v, _ := after.write("A", 10300, 2, 0); v != Run {
		t.Errorf("the next tick: %v, want Run", v)
	}
	// The same clock step with no leader change (the leader's clock itself
	// went back): the write's mtime is below the record's.
	if v, _ := ranAt.write("B", 9450, 1, 0); v != Rebase {
		t.Errorf("B at 9,450, the same leader's clock stepped back: %v, want Rebase", v)
	}
}

// TestClockStepped: a clock stepped either way, by a little or by hours.
func TestClockStepped(t *testing.T) {
	hour := int64(time.Hour / time.Millisecond)
	for _, c := range []struct {
		name         string
		mtime, epoch int64
		want         Verdict
	}{
		{"new leader 700 ms ahead, same tick", 10850, 2, Rebase},
		{"new leader 9 s ahead, same tick", 19150, 2, Rebase},
		{"new leader, a tick later, clocks equal", 11000, 2, Rebase},
		{"new leader, an hour later", 10000 + hour, 2, Run},
		{"new leader 3 h behind", 10150 - 3*hour, 2, Rebase},
		{"same leader stepped back 3 h", 10150 - 3*hour, 1, Rebase},
		{"same leader stepped back 100 ms, same tick", 10050, 1, Skip},
		{"same leader, next tick", 11000, 1, Run},
	} {
		if v, _ := ranAt.write("B", c.mtime, c.epoch, 0); v != c.want {
			t.Errorf("%s: %v, want %v", c.name, v, c.want)
		}
	}
	// After a rebase, one tick at most is lost: the next one runs.
	_, after := ranAt.write("B", 10000-3*hour, 1, 0)
	if v, _ := after.write("A", 11000-3*hour, 1, 0); v != Run {
		t.Errorf("the tick after a 3 h step back: %v, want Run", v)
	}
}

// TestForwardStepBound is the bound that remains: one leader's clock
// stepped forward by X between a run and a later attempt of the same tick
// (s after it) repeats the tick when s + X >= W.
func TestForwardStepBound(t *testing.T) {
	const s = 150
	if v, _ := ranAt.write("B", 10000+s+(w-s-1), 1, 0); v != Skip {
		t.Errorf("a step of W - s - 1: %v, want Skip", v)
	}
	if v, _ := ranAt.write("B", 10000+s+(w-s), 1, 0); v != Run {
		t.Errorf("a step of W - s: %v, want Run (the stated bound)", v)
	}
}

// TestTimerNotDecision: a run is dated by its timer, not by its write.
// A's first Lock took 800 ms (a cold server): by its write's time, the
// next tick, 5 ms into its second, came 205 ms after the last run and was
// lost; by the timers it is a second.
func TestTimerNotDecision(t *testing.T) {
	first := node{Record{Window: w, By: "A", Delay: 800}, 1800, 1}
	last := Derive(first.rec.Encode(), first.mtime, first.epoch<<32)
	if !last.Ran || last.At != 1000 {
		t.Fatalf("first write: %+v, want a run at 1,000", last)
	}
	if v, _ := first.write("A", 2005, 1, 5); v != Run {
		t.Errorf("the next tick: %v, want Run", v)
	}
	// B's timer fired at 1,000 too but its lock came after A's run (1,150):
	// its write at 1,600 is a skip, not a rebase, and leaves A's run.
	ranA := node{Record{Last: 0, Window: w, By: "A", Delay: 50}, 1200, 1}
	v, after := ranA.write("B", 1600, 1, 600)
	if got := Derive(after.rec.Encode(), after.mtime, after.epoch<<32); v != Skip || got.At != 1150 || got.By != "A" {
		t.Errorf("B's late write: %v, %+v; want Skip, the last run still A's at 1,150", v, got)
	}
}

// TestOffsetShape is the shape of go-co-op/gocron#841: three instances
// 150 ms apart, a tick a second: each tick runs once, on the first.
func TestOffsetShape(t *testing.T) {
	n := node{Record{Window: w, By: "A"}, 1000, 1}
	runs := 1
	for tick := int64(2); tick <= 5; tick++ {
		for i, by := range []string{"A", "B", "C"} {
			var v Verdict
			v, n = n.write(by, tick*1000+int64(i)*150, 1, 2)
			if (v == Run) != (i == 0) {
				t.Fatalf("tick %d, %s: %v", tick, by, v)
			}
			if v == Run {
				runs++
			}
		}
	}
	if last := Derive(n.rec.Encode(), n.mtime, n.epoch<<32); last.Runs != int64(runs) || last.By != "A" || last.Writer != "C" {
		t.Errorf("after 5 ticks: %+v, want %d runs, the last by A, written last by C", last, runs)
	}
}

func TestDeriveUnreadable(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("garbage"), []byte(`{"last":1000}`)} {
		if got := Derive(data, 1200, 1<<32); got.At != 1200 || got.Ran {
			t.Errorf("%q: %+v, want a run at the mtime", data, got)
		}
	}
	// A record of the first version (no delay, prev or epoch): the old rule.
	old := []byte(`{"last":1000,"window_ms":500,"by":"h:1"}`)
	if got := Derive(old, 1600, 1<<32); got.At != 1600 || !got.Ran {
		t.Errorf("an old record that ran: %+v", got)
	}
	if got := Derive(old, 1200, 1<<32); got.At != 1000 || got.Ran {
		t.Errorf("an old record that skipped: %+v", got)
	}
}

func TestSpread(t *testing.T) {
	r := Record{By: "B", Recent: []string{"A", "B", "C"}, Since: []string{"C"}}
	recent, since := r.Spread(true, false)
	if len(recent) != 3 || recent[0] != "B" || recent[1] != "A" || recent[2] != "C" || since != nil {
		t.Errorf("after B ran: %v, %v", recent, since)
	}
	recent, since = r.Spread(false, false)
	if len(recent) != 3 || recent[0] != "A" || len(since) != 2 || since[1] != "B" {
		t.Errorf("after B skipped: %v, %v", recent, since)
	}
	// A write that would run but yields is a skip; across epochs, a rebase.
	y := Record{Last: 0, Window: w, Yield: true}
	if v := y.Verdict(1000, 1); v != Skip {
		t.Errorf("a yielding write: %v, want Skip", v)
	}
	y.Epoch = 1
	if v := y.Verdict(1000+int64(ServerSkew/time.Millisecond)+w, 2); v != Rebase {
		t.Errorf("a yielding write across epochs: %v, want Rebase", v)
	}
}

// TestConfirms: a run holds whatever the latencies. B's timer fired
// 150 ms after A's run (a = 10,000); its Lock took 800 ms to the write's
// send. Answered 50 ms after the send, B's write does not count as a run.
// Answered 600 ms after it, the write counts as a run (its timer dated as
// late as it can be: 10,750), but B cannot confirm it (dated as early,
// 10,150): B skips, a tick lost, not one run twice. Dated by its send
// alone, as was once proposed, B ran. The next tick's first attempt is
// confirmed.
func TestConfirms(t *testing.T) {
	const a = 10000
	ranA := node{Record{Last: 9000, Window: w, By: "A", Delay: 5}, a + 5 + 40, 1}
	lastA := Derive(ranA.rec.Encode(), ranA.mtime, 1<<32).At
	b := int64(a + 150)
	r := Record{Last: lastA, Window: w, Delay: 800, Prev: ranA.mtime, Epoch: 1}
	if v := r.Verdict(b+800+50, 1); v != Skip {
		t.Errorf("B answered 50 ms after its send: %v, want Skip", v)
	}
	if v := r.Verdict(b+800+600, 1); v != Run {
		t.Errorf("B answered 600 ms after its send: %v, want a write that counts as a run", v)
	}
	if r.Confirms(b+800+600, 1, 1400*time.Millisecond) {
		t.Error("B, answered 600 ms after its send, confirmed: a repeat")
	}
	c := int64(a + 1000)
	r = Record{Last: lastA, Window: w, Delay: 5, Prev: ranA.mtime, Epoch: 1}
	if !r.Confirms(c+5+20, 1, 25*time.Millisecond) {
		t.Error("the next tick's first attempt not confirmed")
	}
}

// TestRunZxid: a run's write is its own last run's zxid; a keep write and
// an attempt's write that does not run carry it on, whatever their own
// zxid; a record of a writer before the field tells 0 (unknown).
func TestRunZxid(t *testing.T) {
	const runZ, keepZ, skipZ = 1<<32 | 7, 1<<32 | 9, 1<<32 | 12
	run := Record{Last: 9000, Runs: 9, Window: w, Prev: 9300, Epoch: 1, By: "A", RunZxid: 1<<32 | 3}
	ran := Derive(run.Encode(), 10000, runZ)
	if !ran.Ran || ran.RunZxid != runZ {
		t.Fatalf("a run's write: ran %v, RunZxid %#x; want a run, its own zxid %#x", ran.Ran, ran.RunZxid, runZ)
	}
	kept := Derive(Keep(ran, w, 10000, runZ).Encode(), 10100, keepZ)
	if kept.Ran || kept.RunZxid != runZ {
		t.Errorf("a keep write: ran %v, RunZxid %#x; want no run, the run's %#x", kept.Ran, kept.RunZxid, runZ)
	}
	// An attempt in the same tick (100 ms after the run): not a run, its
	// record carrying the run's zxid as runonce's carry does.
	skip := Record{Last: kept.At, LastBy: kept.By, Runs: kept.Runs, Window: w, Prev: 10100, Epoch: 1, By: "B", RunZxid: kept.RunZxid}
	if after := Derive(skip.Encode(), 10200, skipZ); after.Ran || after.RunZxid != runZ {
		t.Errorf("a write in the run's tick: ran %v, RunZxid %#x; want no run, the run's %#x", after.Ran, after.RunZxid, runZ)
	}
	old := Record{Last: kept.At, Runs: kept.Runs, Window: w, Prev: 10100, Epoch: 1, By: "old"}
	if after := Derive(old.Encode(), 10150, skipZ); after.Ran || after.RunZxid != 0 {
		t.Errorf("an older writer's write in the tick: ran %v, RunZxid %#x; want no run, 0", after.Ran, after.RunZxid)
	}
}
