// Package fleet is the fleet test's instance and checker: Main runs one
// instance (a gocron scheduler with the Locker or the Elector, in a
// process of its own), which writes a record of each run to its stdout, and
// Check counts the runs of every (job, tick) from all the instances'
// records.
package fleet

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// Modes of an instance.
const (
	ModeLocker  = "locker"
	ModeElector = "elector"
)

// config is an instance's flags.
type config struct {
	zk, name, mode, root     string
	jobs                     int
	period, offset, duration time.Duration
	window, sessionTimeout   time.Duration
	workMin, workMax         time.Duration
	start                    time.Time
	spread                   bool
	noStart                  bool
	join                     bool
	obs                      bool // write each Lock's outcome
	slow                     int  // jobs every 10 periods, with a window of slowWindow
	// This instance's clock off the others' (forms.go), its lock timeout,
	// and the Locker's API form.
	clock, lockTimeout time.Duration
	form               string
}

// first is the instance's tick 0, as the others' clocks read it: the
// fleet's start and the instance's offset, less its clock's.
func (c config) first() time.Time { return c.start.Add(c.offset - c.clock) }

// slowWindow is the window of the -slow jobs: wider than a cleanup's
// defaults wait for (500 ms and 1 s).
const slowWindow = 3 * time.Second

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	var startMs int64
	fs := flag.NewFlagSet("fleetnode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.zk, "zk", "127.0.0.1:2181", "ZooKeeper servers, host:port,...")
	fs.StringVar(&c.name, "name", "node", "this instance's name in the records")
	fs.StringVar(&c.mode, "mode", ModeLocker, "locker or elector")
	fs.StringVar(&c.root, "root", "/gocronlock-fleet", "the Locker's root or the election's path")
	fs.IntVar(&c.jobs, "jobs", 20, "number of jobs")
	fs.DurationVar(&c.period, "period", time.Second, "every job's period")
	fs.DurationVar(&c.offset, "offset", 0, "this instance's timer offset from the common start")
	fs.DurationVar(&c.duration, "duration", 15*time.Second, "how long to schedule, from the start")
	fs.DurationVar(&c.window, "window", runonce.DefaultWindow, "the Locker's window")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 4*time.Second, "ZooKeeper session timeout")
	fs.DurationVar(&c.workMin, "work-min", time.Millisecond, "shortest job")
	fs.DurationVar(&c.workMax, "work-max", 50*time.Millisecond, "longest job")
	fs.BoolVar(&c.spread, "spread", false, "spread the runs over the fleet (runonce.WithSpread)")
	fs.BoolVar(&c.noStart, "no-start", false, "duration jobs without a start time: the scheduler starts at start+offset, each job's phase its own")
	fs.BoolVar(&c.join, "join", false, "join a fleet already running (an instance that comes back): schedule from its next tick a period from now on, the ticks still numbered from -start")
	fs.Int64Var(&startMs, "start", 0, "common start, Unix ms: tick 0 of every job (default: the next whole second)")
	fs.BoolVar(&c.obs, "obs", false, "write each Lock's outcome (an obs record)")
	fs.IntVar(&c.slow, "slow", 0, "jobs slow-00 ... every 10 periods, with a window of 3 s")
	fs.DurationVar(&c.clock, "clock", 0, "this instance's clock's offset from the others' (see forms.go)")
	fs.DurationVar(&c.lockTimeout, "lock-timeout", 0, "the Locker's lock timeout (0: its default)")
	fs.StringVar(&c.form, "form", FormLocker, "the Locker's API form: "+strings.Join(forms, ", "))
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.start = time.UnixMilli(startMs)
	if startMs == 0 {
		c.start = time.Now().Truncate(time.Second).Add(time.Second)
	}
	if c.mode != ModeLocker && c.mode != ModeElector {
		return c, fmt.Errorf("-mode %q: want %s or %s", c.mode, ModeLocker, ModeElector)
	}
	if c.jobs < 1 || c.period <= 0 || c.workMin < 0 || c.workMax < c.workMin || !slices.Contains(forms, c.form) {
		return c, fmt.Errorf("bad -jobs, -period, -work-min/-work-max or -form")
	}
	return c, nil
}

// Main runs one instance with args (the flags above) until its duration is
// over or it gets SIGTERM or SIGINT, writes its records to stdout, and
// returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "fleetnode:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, c, &recorder{w: stdout, name: c.name}); err != nil {
		fmt.Fprintln(stderr, "fleetnode:", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, c config, rec *recorder) error {
	dial, cancel := context.WithTimeout(ctx, 20*time.Second)
	s, err := zklock.Connect(dial, strings.Split(c.zk, ","), zklock.WithSessionTimeout(c.sessionTimeout))
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()
	opt, locker, closeIt, err := distribute(s, c, rec)
	if err != nil {
		return err
	}
	defer closeIt()
	rec.mon = &monitor{}
	sched, jobOpts, err := newScheduler(c, opt, locker, rec.mon)
	if err != nil {
		return err
	}
	first := c.first()
	rec.lat.first, rec.lat.period = first, c.period
	from := first
	if c.join {
		// The first of the fleet's ticks at least a period from now: time
		// to make the jobs before it.
		from = first.Add(time.Since(first).Truncate(c.period) + 2*c.period)
	}
	if err := addJobs(sched, c, rec, locker, first, from, jobOpts); err != nil {
		_ = sched.Shutdown()
		return err
	}
	rec.ready()
	if c.noStart {
		// A replica started at its own moment: its jobs tick from there.
		time.Sleep(time.Until(first.Add(-c.period)))
	}
	sched.Start()
	end := time.NewTimer(time.Until(c.start.Add(c.duration)))
	defer end.Stop()
	select {
	case <-end.C:
	case <-ctx.Done():
	}
	return sched.Shutdown()
}

// distribute returns the scheduler option of c's mode, its Locker if it
// is one, and what closes them.
func distribute(s *zklock.Session, c config, rec *recorder) (gocron.SchedulerOption, *gocronlock.Locker, func(), error) {
	if c.mode == ModeElector {
		e, err := gocronlock.NewElector(s, c.root, gocronlock.WithCandidate(c.name), gocronlock.WithLeaderHandler(rec.leader))
		if err != nil {
			return nil, nil, nil, err
		}
		return gocron.WithDistributedElector(e), nil, func() { _ = e.Close() }, nil
	}
	opts := []runonce.Option{runonce.WithWindow(c.window), runonce.WithInstanceName(c.name), runonce.WithObserver(rec.observe(c))}
	if c.lockTimeout > 0 {
		opts = append(opts, runonce.WithLockTimeout(c.lockTimeout))
	}
	if c.spread {
		opts = append(opts, runonce.WithSpread())
	}
	for i := range c.slow {
		opts = append(opts, runonce.WithJobWindow(fmt.Sprintf("slow-%02d", i), slowWindow))
	}
	l, err := gocronlock.NewLocker(s, c.root, opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	return gocron.WithDistributedLocker(l), l, func() {
		rec.lockStats()
		_ = l.Close()
	}, nil
}

// addJobs makes c's jobs, each a duration job from from (or the
// scheduler's start, under -no-start), its runs recorded with the tick
// gocron ran them for: the one the Locker l claimed, or, claimed without
// one (or under the Elector, l nil), the one gocron reports.
func addJobs(sched gocron.Scheduler, c config, rec *recorder, l *gocronlock.Locker, first, from time.Time, jobOpts []gocron.JobOption) error {
	add := func(job string, period time.Duration) error {
		from := from
		if c.join {
			// The job's own ticks: its period's boundaries from first.
			from = first.Add((from.Sub(first) + period - 1) / period * period)
		}
		task := gocron.NewTask(func() {
			// The run's start, once its Lock let it run (the Locker's
			// observer hears a run only when it ends), or now if gocron
			// told none.
			times, ok := rec.mon.take(job)
			fired := times.started
			if !ok {
				fired = time.Now()
			}
			at := fired
			// The scheduled time gocron reports is the run's under the
			// Locker; under the Elector it keeps the ticks an instance
			// skipped while it did not lead (gocron cleans them only after
			// a Lock's refusal or a run), so runs are named by their timer.
			if ok && c.mode == ModeLocker {
				at = times.scheduled
			}
			// gocron reports its list's first time, which is not the
			// run's when gocron dropped it (its previous run's completion
			// handled late) or kept the one before: the Locker's claim
			// names the run.
			if l != nil {
				if tick, named := runonce.TickOf(l.RunContext(job)); named {
					at = tick
				}
			}
			rec.run(job, tickOf(at, first, c.period), fired, c.work())
		})
		opts := []gocron.JobOption{gocron.WithName(job), gocron.WithStartAt(gocron.WithStartDateTime(from))}
		if c.noStart {
			opts = opts[:1]
		}
		opts = append(opts, jobOpts...)
		_, err := sched.NewJob(gocron.DurationJob(period), task, opts...)
		return err
	}
	for i := range c.jobs {
		if err := add(fmt.Sprintf("job-%02d", i), c.period); err != nil {
			return err
		}
	}
	for i := range c.slow {
		if err := add(fmt.Sprintf("slow-%02d", i), 10*c.period); err != nil {
			return err
		}
	}
	return nil
}

// tickOf returns the tick a run whose timer fired at now belongs to: the
// last multiple of period after the instance's first tick, with a tenth
// of a period's leeway for a timer that fires a little early. A timer
// fires late, never much early: rounding to the nearest tick instead
// would give a tick that fired over half a period late (a loaded machine)
// the next tick's number.
func tickOf(now, first time.Time, period time.Duration) int64 {
	return int64(math.Floor(float64(now.Sub(first))/float64(period) + 0.1))
}

// work returns a random job length between workMin and workMax.
func (c config) work() time.Duration {
	return c.workMin + rand.N(c.workMax-c.workMin+1)
}

// recorder writes records, one line and one write(2) each, so that a
// SIGKILL loses none that were written.
type recorder struct {
	mu   sync.Mutex
	w    io.Writer
	name string
	lat  latencies
	mon  *monitor // the scheduler's, set before it starts
}

// observe returns the Locker's observer: it keeps the latencies and, with
// -obs, writes each Lock's outcome, named by the tick the Locker claimed
// (its scheduled time, the scheduler attached), or the one its entry
// falls in when it knew none.
func (r *recorder) observe(c config) func(runonce.Event) {
	return func(e runonce.Event) {
		r.lat.observe(e)
		if c.obs {
			at := e.Entry // the Lock's entry, when the Locker knew no tick
			if !e.Tick.IsZero() {
				at = e.Tick
			}
			r.line("obs %s %d %s %s", e.Job, tickOf(at, c.first(), c.period), r.name, e.Outcome)
		}
	}
}

// lockStats writes the Lock latencies' record: count, p50, p99, max (µs).
func (r *recorder) lockStats() {
	n, p50, p99, top := r.lat.summary(&r.lat.ds)
	r.line("lock %s %d %d %d %d", r.name, n, p50.Microseconds(), p99.Microseconds(), top.Microseconds())
	n, p50, p99, top = r.lat.summary(&r.lat.lags)
	r.line("lag %s %d %d %d %d", r.name, n, p50.Microseconds(), p99.Microseconds(), top.Microseconds())
	counts, err := r.lat.counts()
	r.line("outcomes %s %s %q", r.name, counts, fmt.Sprint(err))
}

func (r *recorder) line(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = io.WriteString(r.w, fmt.Sprintf(format, args...)+"\n")
}

func (r *recorder) ready() { r.line("ready %s %d", r.name, time.Now().UnixMicro()) }

// run records a run of job for tick, whose timer fired at fired, then
// does the job's work.
func (r *recorder) run(job string, tick int64, fired time.Time, work time.Duration) {
	r.line("run %s %d %s %d", job, tick, r.name, fired.UnixMicro())
	time.Sleep(work)
}

func (r *recorder) leader(leading bool) {
	r.line("leader %s %d %t", r.name, time.Now().UnixMicro(), leading)
}
