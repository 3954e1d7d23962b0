package runonce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/hostclock"
	"github.com/tierlock/tierlock/internal/runrec"
)

// Ticks a scheduler did not fire. A scheduler can pass a tick over on an
// instance without a Claim of it: gocron reschedules a job after its
// fire's Lock returns, and a time already past is skipped to the first
// one to come, so a Lock slower than the period (a loaded instance, a slow
// ZooKeeper) makes gocron fire none of the ticks between. The Runner hears
// of no such tick, and a tick every instance passed over ran nowhere,
// told by none. An adapter that sees them (gocronlock's tick book) hands
// them to Missed, and so it does a named tick its claim could not decide
// (ErrTickUnknown: a late tick of a job without a run node yet, say); the
// job's record decides each, once no claim fired on
// time can still be deciding it (its window and the lock timeout after
// the tick), at the next read of the record this instance makes (the
// job's next Claim, whenever it comes) or at Close:
//
//   - shown run (a tick within the window of it in the record's ticks):
//     another instance ran it, nothing to tell (Debug);
//   - open (not run, and a window above the ticks the record let go):
//     no instance ran it, and it is told lost, at Warn in one line per
//     job and read naming the ticks and why, and to the observer (Lost),
//     once per tick on this instance. An instance may still fire it late
//     and run it (runonce runs a late tick no instance ran): a read that
//     shows a tick told lost run tells that too, in a line of its own;
//   - let go (below the record's floor, not among its ticks): the record
//     cannot say whether an instance ran it (a run of it may have left
//     the list of the last MaxRecent, or a run without a tick closed it):
//     told unknown (SkippedUnknown), with why.
//
// Each instance tells the ticks it passed over, as each tells the ticks
// it lost to a held lock: the observer's outcomes are an instance's view
// of each tick (lockmetrics counts them per instance), so a tick every
// instance passed over is told lost by each; the fleet's ticks lost are
// the distinct (job, tick) told, not the sum of the counts.

// Missed hands the Runner ticks of the job named key that this instance
// did not run and cannot decide now: its scheduler did not fire them, or
// their claim could not tell whether the fleet ran them (ErrTickUnknown);
// why says which, and is told with them. The job's record decides each
// once its window and the lock timeout have passed, at the job's next
// Claim or at Close, and tells those no instance ran as lost (Lost). A
// tick handed twice is kept once.
func (r *Runner) Missed(key string, ticks []time.Time, why string) error {
	if r == nil {
		return ErrNil
	}
	j, err := r.jobFor(key)
	if err != nil {
		return err
	}
	j.missed.add(ticks, why)
	return nil
}

// missedDecided decides j's missed ticks by d's read, if it read the
// record, and tells them.
func (c *claimer) missedDecided(j *job, d decision) {
	if d.read.stat == nil {
		return
	}
	c.tell.missedTold(j, j.missed.decide(d.read.last, ms(j.window), ms(j.window)+ms(c.timeout), time.Now()), false)
}

// missedTold tells v, what a read decided of j's missed ticks: each lost
// and each unknown to the observer, and a line for each kind; at Close
// (closing) the ticks not due yet are counted too.
func (t *reporter) missedTold(j *job, v missedVerdict, closing bool) {
	if v.ran > 0 {
		t.log.Debug("ticks this instance did not run ran on another instance", "job", j.key, "ticks", v.ran)
	}
	if len(v.lost) > 0 {
		t.log.Warn("ticks lost: this instance did not run them (why says why), and the job's record shows that no instance ran them (lost unless an instance fires one late, which a line tells)",
			"job", j.key, "ticks_lost", len(v.lost), "ticks", missedNames(v.lost), "why", whyOf(v.whys))
		for _, m := range v.lost {
			t.observeMissed(j, m, Lost, fmt.Errorf("%w: job %q: tick %s: not run here (%s), and the job's record shows no instance ran it", ErrTickLost, j.key, tickString(m.name), m.why))
		}
	}
	if len(v.unknown) > 0 || v.dropped > 0 {
		t.missedUnknown(j, v)
	}
	if len(v.after) > 0 {
		t.log.Warn("ticks told lost ran after all: an instance fired them late and ran them", "job", j.key, "ticks", missedNames(v.after))
	}
	if closing && v.waiting > 0 {
		t.log.Warn("ticks this instance did not run, undecided at Close (their window and the lock timeout not past): not told", "job", j.key, "ticks_undecided", v.waiting)
	}
}

// missedUnknown tells the ticks of v the record cannot decide: let go
// (below its floor), or not read at Close.
func (t *reporter) missedUnknown(j *job, v missedVerdict) {
	why := "the job's record has let them go (older than the runs it keeps): it cannot say whether an instance ran them"
	if v.unread {
		why = "the job's record could not be read at Close: whether an instance ran them is not known"
	}
	t.log.Warn("ticks passed over, unknown: this instance did not run them, and "+why,
		"job", j.key, "ticks_unknown", len(v.unknown)+v.dropped, "ticks", missedNames(v.unknown), "more_than_kept", v.dropped, "why", whyOf(whysOf(v.unknown)))
	for _, m := range v.unknown {
		t.observeMissed(j, m, SkippedUnknown, fmt.Errorf("%w: job %q: tick %s: not run here (%s), and %s", ErrTickUnknown, j.key, tickString(m.name), m.why, why))
	}
}

// observeMissed tells the observer of m, a tick of j this instance did
// not fire, decided o.
func (t *reporter) observeMissed(j *job, m missedTick, o Outcome, err error) {
	if t.observe == nil {
		return
	}
	tick := time.UnixMilli(m.name).Add(-hostclock.Offset())
	t.observe(Event{Job: j.key, Outcome: o, Err: err, Tick: tick, Entry: tick})
}

// missedNames formats ticks (missedTick or names) for a line.
func missedNames[T missedTick | int64](ticks []T) string {
	out := make([]string, 0, len(ticks))
	for _, t := range ticks {
		switch v := any(t).(type) {
		case missedTick:
			out = append(out, tickString(v.name))
		case int64:
			out = append(out, tickString(v))
		}
	}
	return strings.Join(out, " ")
}

// whysOf counts the reasons of ticks.
func whysOf(ticks []missedTick) map[string]int {
	out := map[string]int{}
	for _, t := range ticks {
		out[t.why]++
	}
	return out
}

// whyOf formats the reasons of ticks, each with its count.
func whyOf(whys map[string]int) string {
	out := make([]string, 0, len(whys))
	for why, n := range whys {
		out = append(out, fmt.Sprintf("%s (%d)", why, n))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// missedAtClose reads the record of each job with missed ticks pending
// and decides them, for Close: the reads go out together (one connection
// pipelines them), at most closeReads at a time, within twice the lock
// timeout in all; a job whose record is not read in time tells its ticks
// unknown.
func (r *Runner) missedAtClose() {
	r.mu.Lock()
	var jobs []*job
	for _, j := range r.jobs {
		j.missed.mu.Lock()
		if len(j.missed.pending) > 0 || j.missed.dropped > 0 {
			jobs = append(jobs, j)
		}
		j.missed.mu.Unlock()
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.cfg.timeout)
	defer cancel()
	slots := make(chan struct{}, closeReads)
	var wg sync.WaitGroup
	for _, j := range jobs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			r.missedReadAtClose(ctx, j)
		})
	}
	wg.Wait()
}

// closeReads bounds the reads of missedAtClose under way at once.
const closeReads = 64

// missedReadAtClose reads j's record and decides its missed ticks: all of
// them unknown when the read fails.
func (r *Runner) missedReadAtClose(ctx context.Context, j *job) {
	data, stat, err := getNode(ctx, r.s, j.runPath)
	last := runrec.Last{} // no run node: no instance ran the job
	switch {
	case errors.Is(err, zk.ErrNoNode):
	case err != nil:
		r.log.Debug("a job's record not read at Close", "job", j.key, "err", err)
		r.tell.missedTold(j, j.missed.undecidable(), true)
		return
	default:
		last = runrec.Derive(data, stat.Mtime, stat.Mzxid)
	}
	r.tell.missedTold(j, j.missed.decide(last, ms(j.window), ms(j.window)+ms(r.cfg.timeout), time.Now()), true)
}
