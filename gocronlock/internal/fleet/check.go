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
)

// Run is one run of a job, as an instance recorded it.
type Run struct {
	Job  string
	Tick int64
	Node string
	At   time.Time // when it started, once its Lock let it run (the run's start under the Elector)
}

// Gaps returns, for each (job, tick) that ran more than once, the time
// between the first and the last of its runs' timers: a gap of a window or
// more is a timer that fired late (a loaded machine, a queue), which the
// attached Locker must skip as stale, as it skips a replay.
func Gaps(runs []Run, dups map[Key]int) map[Key]time.Duration {
	first, last := map[Key]time.Time{}, map[Key]time.Time{}
	for _, r := range runs {
		k := Key{r.Job, r.Tick}
		if _, dup := dups[k]; !dup {
			continue
		}
		if t, ok := first[k]; !ok || r.At.Before(t) {
			first[k] = r.At
		}
		if t, ok := last[k]; !ok || r.At.After(t) {
			last[k] = r.At
		}
	}
	out := map[Key]time.Duration{}
	for k := range dups {
		out[k] = last[k].Sub(first[k])
	}
	return out
}

// Leadership is a change of an Elector's leadership.
type Leadership struct {
	Node    string
	At      time.Time
	Leading bool
}

// LockStats are a distribution of an instance's, written as it ends: its
// Lock latencies, or how late it called Lock after the tick each served.
type LockStats struct {
	Node          string
	N             int
	P50, P99, Max time.Duration
}

// Obs is one Lock's outcome, as an instance recorded it (-obs), named by
// the tick its timer's firing falls in.
type Obs struct {
	Job, Node, Outcome string
	Tick               int64
}

// Records are what the instances wrote.
type Records struct {
	Obs      []Obs
	Runs     []Run
	Leaders  []Leadership
	Ready    map[string]time.Time
	Locks    []LockStats
	Lags     []LockStats // how late each instance called Lock after the tick it served
	Outcomes []string    // an instance's Lock outcomes and last failure, as written
}

// Parse reads records from r and adds them to rs. A last line cut short
// (a process killed while writing) is ignored.
func (rs *Records) Parse(r io.Reader) error {
	if rs.Ready == nil {
		rs.Ready = map[string]time.Time{}
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if err := rs.add(f); err != nil {
			return fmt.Errorf("fleet: record %q: %w", sc.Text(), err)
		}
	}
	return sc.Err()
}

// nums parses a record's numbers: int64s (times in µs since the epoch).
func nums(fs []string) ([]int64, error) {
	v := make([]int64, len(fs))
	for i, x := range fs {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return nil, err
		}
		v[i] = n
	}
	return v, nil
}

// arity is each record's field count; "outcomes" has at least its own.
var arity = map[string]int{"run": 5, "leader": 4, "ready": 3, "lock": 6, "lag": 6, "outcomes": 3, "obs": 5}

func (rs *Records) add(f []string) error {
	if n, ok := arity[f[0]]; !ok || len(f) < n || (f[0] != "outcomes" && len(f) != n) {
		return nil // not a record: a line cut short by a kill
	}
	switch f[0] {
	case "run":
		v, err := nums([]string{f[2], f[4]})
		if err != nil {
			return err
		}
		rs.Runs = append(rs.Runs, Run{Job: f[1], Tick: v[0], Node: f[3], At: time.UnixMicro(v[1])})
	case "leader":
		v, err := nums(f[2:3])
		if err != nil {
			return err
		}
		rs.Leaders = append(rs.Leaders, Leadership{Node: f[1], At: time.UnixMicro(v[0]), Leading: f[3] == "true"})
	case "ready", "obs":
		return rs.addAt(f)
	case "lock":
		return addStats(&rs.Locks, f)
	case "lag":
		return addStats(&rs.Lags, f)
	case "outcomes":
		rs.Outcomes = append(rs.Outcomes, strings.Join(f[1:], " "))
	}
	return nil
}

// addAt adds record f, ready or obs: a name and a number, and more.
func (rs *Records) addAt(f []string) error {
	v, err := nums(f[2:3])
	if err != nil {
		return err
	}
	if f[0] == "ready" {
		rs.Ready[f[1]] = time.UnixMicro(v[0])
		return nil
	}
	rs.Obs = append(rs.Obs, Obs{Job: f[1], Tick: v[0], Node: f[3], Outcome: f[4]})
	return nil
}

// addStats adds the distribution of record f (name, node, count, p50,
// p99, max in µs) to to.
func addStats(to *[]LockStats, f []string) error {
	v, err := nums(f[2:6])
	if err != nil {
		return err
	}
	*to = append(*to, LockStats{Node: f[1], N: int(v[0]), P50: time.Duration(v[1]) * time.Microsecond,
		P99: time.Duration(v[2]) * time.Microsecond, Max: time.Duration(v[3]) * time.Microsecond})
	return nil
}

// Key names one scheduled run: a job's tick.
type Key struct {
	Job  string
	Tick int64
}

// Report is what Check found.
type Report struct {
	Expected   int            // jobs × ticks in the checked range
	Covered    int            // of those, ticks that ran at least once
	Runs       int            // runs in the checked range
	Duplicates map[Key]int    // (job, tick), over all ticks, that ran more than once: the count
	PerNode    map[string]int // runs in the checked range per instance
	Lost       []Key          // (job, tick) in the checked range that ran nowhere
}

// Coverage is Covered / Expected.
func (r Report) Coverage() float64 {
	if r.Expected == 0 {
		return 0
	}
	return float64(r.Covered) / float64(r.Expected)
}

// RunsPerTick is the mean number of runs of a tick that ran.
func (r Report) RunsPerTick() float64 {
	if r.Covered == 0 {
		return 0
	}
	return float64(r.Runs) / float64(r.Covered)
}

func (r Report) String() string {
	nodes := make([]string, 0, len(r.PerNode))
	for n, c := range r.PerNode {
		nodes = append(nodes, fmt.Sprintf("%s=%d", n, c))
	}
	slices.Sort(nodes)
	return fmt.Sprintf("%d/%d ticks ran (%.2f%%), %d runs, %.3f runs per tick, %d duplicated ticks; per instance: %s",
		r.Covered, r.Expected, 100*r.Coverage(), r.Runs, r.RunsPerTick(), len(r.Duplicates), strings.Join(nodes, " "))
}

// Check counts runs per (job, tick) for jobs job-00 … job-<jobs-1> and the
// ticks first … last, skipping the ticks skip says to (nil: none).
// Duplicates are counted over every tick recorded.
func Check(runs []Run, jobs int, first, last int64, skip func(tick int64) bool) Report {
	count := map[Key]int{}
	rep := Report{Duplicates: map[Key]int{}, PerNode: map[string]int{}}
	for _, r := range runs {
		k := Key{r.Job, r.Tick}
		count[k]++
		if count[k] > 1 {
			rep.Duplicates[k] = count[k]
		}
		if r.Tick >= first && r.Tick <= last && (skip == nil || !skip(r.Tick)) {
			rep.Runs++
			rep.PerNode[r.Node]++
		}
	}
	for i := range jobs {
		job := fmt.Sprintf("job-%02d", i)
		for t := first; t <= last; t++ {
			if skip != nil && skip(t) {
				continue
			}
			rep.Expected++
			if count[Key{job, t}] > 0 {
				rep.Covered++
			} else {
				rep.Lost = append(rep.Lost, Key{job, t})
			}
		}
	}
	return rep
}

// Told is what the instances' observers said of the ticks that ran
// nowhere: a lost tick must be observed as lost (held, failed, lost),
// never as already_ran or stale, which would say it ran.
type Told struct {
	Lost       int            // (job, tick) that ran nowhere
	ByOutcome  map[string]int // of those, how many each outcome was observed for
	AlreadyRan []Key          // of those, the ones an instance observed as already_ran
	Unobserved []Key          // of those, the ones no instance observed
	Stale      []Key          // of those, the ones an instance observed as stale (which says the fleet ran it)
}

// TellsLost sorts the lost ticks of rep by what obs said of them.
func TellsLost(rep Report, obs []Obs) Told {
	said := map[Key]map[string]bool{}
	for _, o := range obs {
		k := Key{o.Job, o.Tick}
		if said[k] == nil {
			said[k] = map[string]bool{}
		}
		said[k][o.Outcome] = true
	}
	t := Told{Lost: len(rep.Lost), ByOutcome: map[string]int{}}
	for _, k := range rep.Lost {
		if len(said[k]) == 0 {
			t.Unobserved = append(t.Unobserved, k)
		}
		if said[k]["already_ran"] {
			t.AlreadyRan = append(t.AlreadyRan, k)
		}
		if said[k]["stale"] {
			t.Stale = append(t.Stale, k)
		}
		for o := range said[k] {
			t.ByOutcome[o]++
		}
	}
	return t
}

func (t Told) String() string {
	var by []string
	for _, o := range slices.Sorted(maps.Keys(t.ByOutcome)) {
		by = append(by, fmt.Sprintf("%s=%d", o, t.ByOutcome[o]))
	}
	return fmt.Sprintf("%d ticks ran nowhere, observed as: %s; observed as already_ran: %d, as stale: %d; observed by no instance: %d",
		t.Lost, strings.Join(by, " "), len(t.AlreadyRan), len(t.Stale), len(t.Unobserved))
}

// Untold returns the (job, tick) of rep that ran nowhere and that no
// instance observed as lost: held (its lock held), failed (ZooKeeper
// unreachable, an overload) or lost (a tick gocron did not fire on the
// instance, which the job's record showed no instance ran). unknown does
// not count: it says the fleet may have run the tick, and a tick that ran
// nowhere was lost.
func Untold(rep Report, obs []Obs) []Key {
	told := map[Key]bool{}
	for _, o := range obs {
		if o.Outcome == "held" || o.Outcome == "failed" || o.Outcome == "lost" {
			told[Key{o.Job, o.Tick}] = true
		}
	}
	var out []Key
	for _, k := range rep.Lost {
		if !told[k] {
			out = append(out, k)
		}
	}
	return out
}
