package fleet

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Run is one run of a job, as an instance recorded it.
type Run struct {
	Job, Instance string
	Tick          time.Time // the tick its timer's fire served
	Fired         time.Time // when its timer fired (the outermost wrapper's entry)
	Start, End    time.Time // the job's own run, inside the lock
}

// Fire is one fire of a job's timer, as an instance recorded it, whether
// or not its lock let it run.
type Fire struct {
	Job, Instance string
	Tick, At      time.Time
}

// Obs is the lock's outcome of one fire, as an instance recorded it (a
// lock with an observer: tierlock's).
type Obs struct {
	Job, Instance, Outcome string
	Tick                   time.Time
}

// Records are what the instances wrote.
type Records struct {
	Ready    map[string]time.Time // instance -> when its scheduler started
	Ended    map[string]time.Time // instance -> when its runs were over
	Fires    []Fire
	Runs     []Run
	Obs      []Obs
	Overlaps int // fires of a job that began while another fire of it, on that instance, was under way
}

// fields is each record's field count, its name included.
var fields = map[string]int{"ready": 3, "end": 3, "fire": 5, "run": 7, "overlap": 4, "obs": 5}

// Parse reads records from r and adds them to rs.
func (rs *Records) Parse(r io.Reader) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if err := rs.add(strings.Fields(sc.Text())); err != nil {
			return fmt.Errorf("fleet: record %q: %w", sc.Text(), err)
		}
	}
	return sc.Err()
}

// micros parses times in µs since the epoch.
func micros(fs []string) ([]time.Time, error) {
	ts := make([]time.Time, len(fs))
	for i, f := range fs {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, err
		}
		ts[i] = time.UnixMicro(n)
	}
	return ts, nil
}

func (rs *Records) add(f []string) error {
	if len(f) == 0 {
		return nil
	}
	if n, ok := fields[f[0]]; !ok || len(f) != n {
		return fmt.Errorf("not a record of %d fields", n)
	}
	if rs.Ready == nil {
		rs.Ready, rs.Ended = map[string]time.Time{}, map[string]time.Time{}
	}
	switch f[0] {
	case "overlap":
		rs.Overlaps++
		return nil
	case "obs":
		ts, err := micros(f[3:4])
		if err == nil {
			rs.Obs = append(rs.Obs, Obs{Job: f[1], Instance: f[2], Tick: ts[0], Outcome: f[4]})
		}
		return err
	case "ready", "end":
		ts, err := micros(f[2:])
		if err == nil && f[0] == "ready" {
			rs.Ready[f[1]] = ts[0]
		} else if err == nil {
			rs.Ended[f[1]] = ts[0]
		}
		return err
	}
	ts, err := micros(f[3:])
	if err != nil {
		return err
	}
	if f[0] == "fire" {
		rs.Fires = append(rs.Fires, Fire{Job: f[1], Instance: f[2], Tick: ts[0], At: ts[1]})
	} else {
		rs.Runs = append(rs.Runs, Run{Job: f[1], Instance: f[2], Tick: ts[0], Fired: ts[1], Start: ts[2], End: ts[3]})
	}
	return nil
}

// Key names one scheduled run: a job's tick.
type Key struct {
	Job  string
	Tick time.Time
}

// Counts are the (job, tick) of a window by how many times they ran.
type Counts struct {
	Ticks  int // (job, tick) in the window
	Once   int
	Twice  int // exactly twice
	More   int // three times or more
	Missed int
	Runs   int // runs of these ticks
}

// Ran is the number of ticks that ran at least once.
func (c Counts) Ran() int { return c.Once + c.Twice + c.More }

// Repeated is the number of ticks that ran more than once.
func (c Counts) Repeated() int { return c.Twice + c.More }

// Coverage is the share of the ticks that ran.
func (c Counts) Coverage() float64 { return ratio(c.Ran(), c.Ticks) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (c Counts) add(runs int) Counts {
	c.Ticks++
	c.Runs += runs
	switch {
	case runs == 0:
		c.Missed++
	case runs == 1:
		c.Once++
	case runs == 2:
		c.Twice++
	default:
		c.More++
	}
	return c
}

func (c Counts) String() string {
	return fmt.Sprintf("%d ticks: %d ran (%.2f%%), %d once, %d twice, %d three times or more (%.2f%% more than once), %d missed; %.3f runs per tick",
		c.Ticks, c.Ran(), 100*c.Coverage(), c.Once, c.Twice, c.More, 100*ratio(c.Repeated(), c.Ticks), c.Missed, ratio(c.Runs, c.Ticks))
}

// Report is what Check found over a window.
type Report struct {
	Counts
	BySpec      map[string]Counts // by the jobs' spec
	PerInstance map[string]int    // runs of the window's ticks, per instance
	Fires       int               // fires of the window's ticks, every instance's
	Overlaps    int
	Wait        [3]time.Duration // from the timer's fire to the run's start (the lock's wait): p50, p99, max
	WaitBySpec  map[string][3]time.Duration
	Repeats     []Key // the first of the ticks that ran more than once, for a message
	Lost        []Key // the ticks that ran nowhere
}

func (r Report) String() string {
	var b strings.Builder
	b.WriteString(r.Counts.String())
	for _, spec := range slices.Sorted(maps.Keys(r.BySpec)) {
		w := r.WaitBySpec[spec]
		fmt.Fprintf(&b, "\n  %q: %v; fire to run p50 %v, p99 %v", spec, r.BySpec[spec], w[0], w[1])
	}
	var per []string
	for _, in := range slices.Sorted(maps.Keys(r.PerInstance)) {
		per = append(per, fmt.Sprintf("%s=%d", in, r.PerInstance[in]))
	}
	fmt.Fprintf(&b, "\n  runs per instance: %s; %d fires, %d runs; fire to run p50 %v, p99 %v, max %v; %d overlapping fires",
		strings.Join(per, " "), r.Fires, r.Runs, r.Wait[0], r.Wait[1], r.Wait[2], r.Overlaps)
	return b.String()
}

// window is the ticks Check counts: each job's, but its first and last
// from from to to, in order, with each job's schedule and spec.
type window struct {
	in     map[Key]bool
	scheds map[string]cron.Schedule
	spec   map[string]string
	order  []Key
}

// windowOf makes the window of jobs from from (included) to to (excluded).
func windowOf(jobs []Job, from, to time.Time) (window, error) {
	w := window{in: map[Key]bool{}, scheds: map[string]cron.Schedule{}, spec: map[string]string{}}
	for _, j := range jobs {
		s, err := ParseSpec(j.Spec)
		if err != nil {
			return w, err
		}
		w.scheds[j.Name], w.spec[j.Name] = s, j.Spec
		ts := Ticks(s, from, to)
		if len(ts) < 3 {
			return w, fmt.Errorf("fleet: job %s has %d ticks from %v to %v: none left without the first and the last", j.Name, len(ts), from, to)
		}
		for _, t := range ts[1 : len(ts)-1] {
			w.in[Key{j.Name, t}] = true
			w.order = append(w.order, Key{j.Name, t})
		}
	}
	return w, nil
}

// maxRepeats is how many of the repeated ticks a Report names.
const maxRepeats = 10

// Check counts the runs of every job's ticks from from (included) to to
// (excluded), without each job's first and last tick there (a fleet
// starting and stopping). A run whose tick is not one of its job's is an
// error: a record the checker cannot place.
func Check(jobs []Job, rs Records, from, to time.Time) (Report, error) {
	rep := Report{BySpec: map[string]Counts{}, WaitBySpec: map[string][3]time.Duration{}, PerInstance: map[string]int{}, Overlaps: rs.Overlaps}
	w, err := windowOf(jobs, from, to)
	if err != nil {
		return rep, err
	}
	inWindow, scheds, spec, order := w.in, w.scheds, w.spec, w.order
	count := map[Key]int{}
	var waits []time.Duration
	bySpec := map[string][]time.Duration{}
	for _, r := range rs.Runs {
		k := Key{r.Job, r.Tick.UTC()}
		if s, ok := scheds[r.Job]; !ok || !TickOf(s, k.Tick).Equal(k.Tick) {
			return rep, fmt.Errorf("fleet: %s's run of %s fired at %v: %v is not one of the job's ticks", r.Instance, r.Job, r.Fired, r.Tick)
		}
		if inWindow[k] {
			count[k]++
			rep.PerInstance[r.Instance]++
			waits = append(waits, r.Start.Sub(r.Fired))
			bySpec[spec[r.Job]] = append(bySpec[spec[r.Job]], r.Start.Sub(r.Fired))
		}
	}
	for _, f := range rs.Fires {
		if inWindow[Key{f.Job, f.Tick.UTC()}] {
			rep.Fires++
		}
	}
	for _, k := range order {
		n := count[k]
		rep.Counts = rep.Counts.add(n)
		rep.BySpec[spec[k.Job]] = rep.BySpec[spec[k.Job]].add(n)
		if n > 1 && len(rep.Repeats) < maxRepeats {
			rep.Repeats = append(rep.Repeats, k)
		}
		if n == 0 {
			rep.Lost = append(rep.Lost, k)
		}
	}
	rep.Wait = quantiles(waits)
	for sp, ds := range bySpec {
		rep.WaitBySpec[sp] = quantiles(ds)
	}
	return rep, nil
}

// quantiles returns ds's median, 99th percentile and largest.
func quantiles(ds []time.Duration) [3]time.Duration {
	if len(ds) == 0 {
		return [3]time.Duration{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return [3]time.Duration{at(0.5), at(0.99), ds[len(ds)-1]}
}
