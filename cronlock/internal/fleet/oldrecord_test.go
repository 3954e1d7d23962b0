package fleet

import (
	"encoding/json"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/internal/runrec"
)

// oldTestZxid is a zxid of epoch 1.
const oldTestZxid = 1<<32 | 7

// oldTestPrev is what the old writer reads of a record of this version
// (b's run of tick 2000, named), written at 2010.
func oldTestPrev(t *testing.T) runrec.Last {
	t.Helper()
	named := runrec.Record{Last: 1000, LastBy: "a", Runs: 3, Window: 500, MaxWindow: 3000, Timeout: 1000, Tick: 2000, LastTick: 1000,
		Ticks: []int64{1000}, Fire: 2001, Delay: 5, Prev: 1900, Epoch: 1, By: "b"}
	if l := runrec.Derive(named.Encode(), 2010, oldTestZxid); !l.Ran || l.Tick != 2000 {
		t.Fatalf("the named record: %+v, want a run of tick 2000", l)
	}
	return oldDerive(named.Encode(), 2010, oldTestZxid)
}

// TestOldRecordReads: the old writer reads a record of this version by
// the old fields (its run by the server's clock, no names), and data
// that is no record as a run at its mtime.
func TestOldRecordReads(t *testing.T) {
	if p := oldTestPrev(t); !p.Ran || p.At != 2005 || p.By != "b" || p.Runs != 4 || p.Tick != 0 || len(p.Ticks) != 0 {
		t.Errorf("read by the old fields: %+v, want b's run at 2005, the 4th, no names", p)
	}
	if l := oldDerive([]byte("operator's"), 4000, oldTestZxid); l.At != 4000 || l.Ran {
		t.Errorf("data that is no record: %+v, want a run at its mtime, 4000", l)
	}
}

// TestOldRecordFields: the old writer writes the old fields alone (no
// tick_ms, last_tick_ms, ticks_ms, floor_ms, fire_ms, max_window_ms).
func TestOldRecordFields(t *testing.T) {
	rec := oldNext(oldTestPrev(t), 2010, oldTestZxid, 500*time.Millisecond, time.Second, "old", false)
	rec.Delay = 3
	data := rec.encode()
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	old := []string{"last", "last_by", "runs", "window_ms", "timeout_ms", "delay_ms", "prev_mtime", "prev_epoch", "by", "yield"}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(old, k) {
			t.Errorf("the old writer wrote %q: %s", k, data)
		}
	}
	for _, k := range old[:9] {
		if _, ok := fields[k]; !ok {
			t.Errorf("the old writer did not write %q: %s", k, data)
		}
	}
}

// TestOldRecordDerived: runrec derives the old writer's write a window
// after the run it read as a run of no name, an old writer's, confirmed;
// one sooner as a skip that keeps the run read, its names dropped; one
// with the lock held as no run.
func TestOldRecordDerived(t *testing.T) {
	prev := oldTestPrev(t)
	rec := oldNext(prev, 2010, oldTestZxid, 500*time.Millisecond, time.Second, "old", false)
	rec.Delay = 3
	data := rec.encode()
	l := runrec.Derive(data, 2600, oldTestZxid+1)
	if !l.Ran || l.By != "old" || l.Runs != 5 || l.At != 2597 || l.Tick != 0 || len(l.Ticks) != 0 || !l.Old {
		t.Errorf("its write 595 ms after b's run: %+v, want old's run at 2597, the 5th, no name, an old writer's", l)
	}
	if !rec.record().Confirms(2600, 1, 10*time.Millisecond) {
		t.Error("its write answered 10 ms after its entry is not confirmed")
	}
	if l := runrec.Derive(data, 2300, oldTestZxid+1); l.Ran || l.By != "b" || l.At != 2005 || len(l.Ticks) != 0 {
		t.Errorf("its write 295 ms after b's run: %+v, want a skip keeping b's run at 2005, its names dropped", l)
	}
	held := oldNext(prev, 2010, oldTestZxid, 500*time.Millisecond, time.Second, "old", true)
	if l := runrec.Derive(held.encode(), 2600, oldTestZxid+1); l.Ran {
		t.Errorf("its write with the lock held counts as a run: %+v", l)
	}
}

// TestFormLoose: -form loose adds the jobs wrapped, the Cron not
// attached; -form wrap attaches it; -old-record parses.
func TestFormLoose(t *testing.T) {
	c, err := parse([]string{"-job", "a=@every 1s", "-form", FormLoose, "-old-record"}, io.Discard)
	if err != nil || !c.oldRecord || c.form != FormLoose {
		t.Fatalf("parse: %+v, %v", c, err)
	}
	for form, want := range map[string]bool{FormLoose: false, FormWrap: true} {
		c.form = form
		rec, err := newRecorder(io.Discard, c)
		if err != nil {
			t.Fatal(err)
		}
		attached := false
		lk := Lock{Wrap: func(_ string, job cron.Job) cron.Job { return job }, Attach: func(*cron.Cron) { attached = true }}
		if _, err := schedule(c, lk, rec, io.Discard); err != nil || attached != want {
			t.Errorf("-form %s: attached %v (%v), want %v", form, attached, err, want)
		}
	}
}

// TestToldLostRan: a tick of the window that ran and that an instance
// told held or lost is named, once; one that ran nowhere, one told
// already_ran, and one outside the window (the fleet's first tick) are
// not.
func TestToldLostRan(t *testing.T) {
	from := time.Unix(1000, 0)
	in, err := WindowKeys([]Job{{"a", "@every 1s"}}, from, from.Add(5*time.Second))
	if err != nil || len(in) != 3 {
		t.Fatalf("WindowKeys: %v, %v, want the 3 ticks but the first and the last of 5", in, err)
	}
	at := func(s int64) time.Time { return time.Unix(s, 0) }
	rs := Records{Runs: []Run{{Job: "a", Instance: "n0", Tick: at(1000)}, {Job: "a", Instance: "n0", Tick: at(1001)}, {Job: "a", Instance: "n0", Tick: at(1002)}}}
	obs := []Obs{{"a", "n1", "held", at(1000)}, {"a", "n1", "held", at(1001)}, {"a", "n2", "lost", at(1001)},
		{"a", "n1", "already_ran", at(1002)}, {"a", "n1", "held", at(1003)}}
	got := ToldLostRan(rs, obs, in)
	if len(got) != 1 || got[0] != (Key{"a", at(1001).UTC()}) {
		t.Errorf("ToldLostRan: %v, want a's tick 1001 alone", got)
	}
	if n := len(ObsExcept(obs, "n1")) + len(ObsOf(obs, "n1")); n != len(obs) {
		t.Errorf("ObsExcept and ObsOf split %d observations into %d", len(obs), n)
	}
}
