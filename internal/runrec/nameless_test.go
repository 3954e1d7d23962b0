package runrec

import (
	"encoding/json"
	"testing"
)

// chain is a run node's history, written as runonce writes it: each
// record made from the state the one before leaves (Derive).
type chain struct {
	data         []byte
	mtime, epoch int64
}

// write appends r, made from the state read (its Last, LastTick, Ticks,
// Floor filled in), at mtime; it returns the write's verdict.
func (c *chain) write(r Record, mtime int64) Verdict {
	if c.data != nil {
		l := Derive(c.data, c.mtime, c.epoch<<32)
		r.Last, r.LastBy, r.Runs, r.LastTick, r.Ticks, r.Floor = l.At, l.By, l.Runs, l.Tick, l.Ticks, l.Floor
		r.Prev, r.Epoch = c.mtime, c.epoch
	}
	v := r.Verdict(mtime, 1)
	c.data, c.mtime, c.epoch = r.Encode(), mtime, 1
	return v
}

// writeOld appends a record as a writer of the format before tick names
// writes it (runonce before e2b5ae4): it decodes what it knows and writes
// that back, dropping the names, and decides by the server's clock alone.
func (c *chain) writeOld(by string, delay, mtime int64) Verdict {
	l := Derive(c.data, c.mtime, c.epoch<<32)
	old := struct {
		Last   int64  `json:"last"`
		LastBy string `json:"last_by,omitempty"`
		Runs   int64  `json:"runs,omitempty"`
		Window int64  `json:"window_ms"`
		Delay  int64  `json:"delay_ms,omitempty"`
		Prev   int64  `json:"prev_mtime,omitempty"`
		Epoch  int64  `json:"prev_epoch,omitempty"`
		By     string `json:"by,omitempty"`
	}{l.At, l.By, l.Runs, w, delay, c.mtime, c.epoch, by}
	data, _ := json.Marshal(old)
	r, _ := Decode(data)
	c.data, c.mtime = data, mtime
	return r.Verdict(mtime, 1)
}

// TestNamelessRunKeepsItsTick: a run claimed without a tick's name (a
// Cron not attached, gocron's RunNow, a writer of the format before
// names) keeps a later named fire of its tick from running, however late
// that fire comes and whatever ran between. On the code before, the
// nameless run left no name: a 1-s job's tick t1, run without a name, ran
// again when its named fire came 1.1 s late, after t2's run.
func TestNamelessRunKeepsItsTick(t *testing.T) {
	const t0 = 1_000_000 // a 1-s job's ticks, by the hosts' clocks (ms); the server's clock 5 s behind
	for _, c := range []struct {
		what     string
		nameless func(c *chain) Verdict
	}{
		{"a claim without a tick", func(c *chain) Verdict {
			return c.write(Record{Window: w, By: "B", Fire: t0 + 1005, Delay: 3}, t0-5000+1010)
		}},
		{"a writer of the format before names", func(c *chain) Verdict { return c.writeOld("B", 3, t0-5000+1010) }},
	} {
		var ch chain
		if v := ch.write(Record{Window: w, By: "A", Tick: t0, Fire: t0 + 2, Delay: 1}, t0-5000+5); v != Run {
			t.Fatalf("%s: the first named run: %v", c.what, v)
		}
		if v := c.nameless(&ch); v != Run {
			t.Fatalf("%s: the nameless run of t1: %v", c.what, v)
		}
		if v := ch.write(Record{Window: w, By: "C", Tick: t0 + 2000, Fire: t0 + 2003, Delay: 1}, t0-5000+2006); v != Run {
			t.Fatalf("%s: t2 on time: %v, want Run", c.what, v)
		}
		if v := ch.write(Record{Window: w, By: "A", Tick: t0 + 1000, Fire: t0 + 2100, Delay: 1}, t0-5000+2103); v == Run {
			t.Errorf("%s: t1 fired 1.1 s late, after t2's run: %v, a tick run twice", c.what, v)
		}
		if v := ch.write(Record{Window: w, By: "A", Tick: t0 + 3000, Fire: t0 + 3001, Delay: 1}, t0-5000+3003); v != Run {
			t.Errorf("%s: t3 on time: %v, want Run", c.what, v)
		}
	}
}
