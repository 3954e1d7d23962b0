package fleet

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"
)

// config is a worker's flags.
type config struct {
	lock, name, root       string
	servers                []string
	jobs                   []Job
	windows                map[string]time.Duration
	offset, duration       time.Duration
	workMin, workMax       time.Duration
	sessionTimeout         time.Duration
	start                  time.Time
	stopWait, openDeadline time.Duration
	// This instance's clock off the others' (see clock), its lock timeout
	// and default window, and the API form.
	clock, lockTimeout, window time.Duration
	form                       string
	// oldRecord: the instance writes the run node as runonce did before
	// the tick names (oldrecord.go), whatever -lock says.
	oldRecord bool
}

func parse(args []string, stderr io.Writer) (config, error) {
	c := config{stopWait: 30 * time.Second, openDeadline: 20 * time.Second, windows: map[string]time.Duration{}}
	var startMs int64
	var servers string
	fs := flag.NewFlagSet("cronfleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.lock, "lock", "none", "the lock, by its registered name: "+strings.Join(Variants(), ", "))
	fs.StringVar(&servers, "servers", "", "the lock's servers, host:port,...")
	fs.StringVar(&c.root, "root", "cronfleet", "the fleet's key prefix or root path")
	fs.StringVar(&c.name, "name", "node", "this instance's name in the records")
	fs.DurationVar(&c.offset, "offset", 0, "this instance's timers' delay after the fleet's ticks")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "how long to schedule, from -start")
	fs.DurationVar(&c.workMin, "work-min", time.Millisecond, "shortest run")
	fs.DurationVar(&c.workMax, "work-max", 50*time.Millisecond, "longest run")
	fs.Int64Var(&startMs, "start", 0, "the fleet's common start, Unix ms (default: the next whole second)")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 0, "the lock's session timeout, where it has one (0: its default)")
	fs.Func("window", "a job's window, name=duration (repeat the flag for each job), where the lock has one", c.jobWindow)
	fs.DurationVar(&c.window, "default-window", 0, "the other jobs' window, where the lock has one (0: its default)")
	fs.DurationVar(&c.lockTimeout, "lock-timeout", 0, "the lock's timeout, where it has one (0: its default)")
	fs.DurationVar(&c.clock, "clock", 0, "this instance's clock's offset from the others' (see clock.go)")
	fs.StringVar(&c.form, "form", FormWrap, "the lock's API form: "+FormWrap+" (a wrapper per job, the Cron attached), "+FormChain+" (the Cron's chain, where the lock has it) or "+FormLoose+" (a wrapper per job, the Cron not attached)")
	fs.BoolVar(&c.oldRecord, "old-record", false, "write the run node as runonce did before the tick names (e2b5ae4), on -lock's ZooKeeper (see oldrecord.go)")
	fs.Func("job", "a job, name=spec (repeat the flag for each job)", c.job)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if servers != "" {
		c.servers = strings.Split(servers, ",")
	}
	c.start = time.UnixMilli(startMs)
	if startMs == 0 {
		c.start = time.Now().Truncate(time.Second).Add(time.Second)
	}
	if _, ok := Lookup(c.lock); !ok {
		return c, fmt.Errorf("-lock %q: registered are %s", c.lock, strings.Join(Variants(), ", "))
	}
	if len(c.jobs) == 0 || c.offset < 0 || c.duration <= 0 || c.workMin < 0 || c.workMax < c.workMin {
		return c, errors.New("want at least one -job, and -offset >= 0, -duration > 0, 0 <= -work-min <= -work-max")
	}
	return c, nil
}

// jobWindow parses a -window flag into c.
func (c *config) jobWindow(v string) error {
	name, d, ok := strings.Cut(v, "=")
	w, err := time.ParseDuration(d)
	if !ok || err != nil || w <= 0 {
		return fmt.Errorf("want name=duration: %q", v)
	}
	c.windows[name] = w
	return nil
}

// job parses a -job flag into c.
func (c *config) job(v string) error {
	name, spec, ok := strings.Cut(v, "=")
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("want name=spec, a name without spaces: %q", v)
	}
	c.jobs = append(c.jobs, Job{Name: name, Spec: spec})
	return nil
}

// Main runs one instance with args (the flags above) until its duration
// is over or it gets SIGTERM or SIGINT, writes its records to stdout and
// its log to stderr, and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "cronfleet:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var level slog.Level // Info; Debug when the test keeps the logs to read (-fleet.logs)
	if os.Getenv(DebugEnv) != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("instance", c.name)
	rec, err := newRecorder(stdout, c)
	if err == nil {
		err = run(ctx, c, rec, logger, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "cronfleet:", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, c config, rec *recorder, logger *slog.Logger, stderr io.Writer) (err error) {
	v, _ := Lookup(c.lock)
	openLock := v.Open
	if c.oldRecord {
		if v.Backend != ZooKeeper {
			return fmt.Errorf("-old-record: -lock %s is not on ZooKeeper", c.lock)
		}
		openLock = openOldRecord
	}
	open, cancel := context.WithTimeout(ctx, c.openDeadline)
	lk, err := openLock(open, Config{Servers: c.servers, Root: c.root, Instance: c.name, Logger: logger,
		Windows: c.windows, Window: c.window, LockTimeout: c.lockTimeout, SessionTimeout: c.sessionTimeout, Observe: rec.observe})
	cancel()
	if err != nil {
		return fmt.Errorf("open %s: %w", c.lock, err)
	}
	if lk.Close != nil {
		defer func() { err = errors.Join(err, lk.Close()) }()
	}
	sched, err := schedule(c, lk, rec, stderr)
	if err != nil {
		return err
	}
	sched.Start()
	rec.line("ready %s %d", c.name, time.Now().UnixMicro())
	// The instance's last tick is the fleet's last before start+duration,
	// fired offset later.
	end := time.NewTimer(time.Until(c.start.Add(c.duration + c.offset - c.clock)))
	defer end.Stop()
	select {
	case <-end.C:
	case <-ctx.Done():
	}
	stopped := sched.Stop()
	select {
	case <-stopped.Done():
	case <-time.After(c.stopWait):
		return fmt.Errorf("runs still going %v after the scheduler stopped", c.stopWait)
	}
	rec.line("end %s %d", c.name, time.Now().UnixMicro())
	return nil
}

// recorder writes an instance's records, one line and one write each.
type recorder struct {
	w       io.Writer
	name    string
	offset  time.Duration
	scheds  map[string]cron.Schedule // each job's, not shifted
	work    func() time.Duration
	cron    *cron.Cron                     // the scheduler, set before it starts
	ids     map[string]cron.EntryID        // each job's entry, set before it starts
	adding  string                         // the job being added (clock.go)
	runTick func(string) (time.Time, bool) // the lock's Lock.RunTick, set before it starts

	mu   sync.Mutex
	last map[string]fired // each job's last fire
}

// fired is a job's fire: its number on this instance, when, and the tick
// robfig/cron fired it for.
type fired struct {
	seq  uint64
	at   time.Time
	tick int64 // µs
}

func newRecorder(w io.Writer, c config) (*recorder, error) {
	r := &recorder{w: w, name: c.name, offset: c.offset - c.clock, scheds: map[string]cron.Schedule{}, last: map[string]fired{}, ids: map[string]cron.EntryID{},
		work: func() time.Duration { return c.workMin + rand.N(c.workMax-c.workMin+1) }}
	for _, j := range c.jobs {
		s, err := ParseSpec(j.Spec)
		if err != nil {
			return nil, err
		}
		if _, dup := r.scheds[j.Name]; dup {
			return nil, fmt.Errorf("job %q given twice", j.Name)
		}
		r.scheds[j.Name] = s
	}
	return r, nil
}

func (r *recorder) line(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = io.WriteString(r.w, fmt.Sprintf(format, args...)+"\n")
}

// tick returns the tick of job that a timer fired at at serves: the
// scheduled time robfig/cron fired it for (its entry's Prev, less the
// instance's offset), which is not the tick the fire's time falls in when
// robfig/cron replays the ticks a stopped process slept through; the
// schedule's last time at or before at when the entry cannot be read.
func (r *recorder) tick(job string, at time.Time) int64 {
	if r.cron != nil {
		if e := r.cron.Entry(r.ids[job]); !e.Prev.IsZero() {
			return e.Prev.Add(-r.offset).UnixMicro()
		}
	}
	return TickOf(r.scheds[job], at.Add(-r.offset)).UnixMicro()
}

// fire wraps next, the job named job under its lock: the outermost
// wrapper, it records each fire of the job's timer before the lock is
// asked, and notes the fire as the job's last for the run to name its
// tick by (see job). A fire that finds, once next returned, that another
// fire of the job started meanwhile writes an overlap record: the run of
// one of the two may have been named by the other's tick. It unwraps to
// next, so that cronlock's Locker finds its job in the Cron (Attach).
func (r *recorder) fire(job string, next cron.Job) cron.Job {
	return fireJob{r: r, job: job, next: next}
}

// fireJob is fire's job.
type fireJob struct {
	r    *recorder
	job  string
	next cron.Job
}

// Unwrap returns the job it wraps.
func (f fireJob) Unwrap() cron.Job { return f.next }

// Run records the fire, and runs the job under its lock.
func (f fireJob) Run() {
	r, job := f.r, f.job
	at := time.Now()
	tick := r.tick(job, at)
	r.mu.Lock()
	seq := r.last[job].seq + 1
	r.last[job] = fired{seq: seq, at: at, tick: tick}
	r.mu.Unlock()
	r.line("fire %s %s %d %d", job, r.name, tick, at.UnixMicro())
	f.next.Run()
	r.mu.Lock()
	overlapped := r.last[job].seq != seq
	r.mu.Unlock()
	if overlapped {
		r.line("overlap %s %s %d", job, r.name, at.UnixMicro())
	}
}

// job is the job named job itself: it records its run, named by the tick
// of the job's last fire, then works for 1-50 ms (-work-min, -work-max):
// recorded first, so that a run cut by a kill is counted. robfig/cron runs
// the chain of a fire on one goroutine, fire's wrapper first, so the last
// fire is this run's own unless another fire of the job started while
// this one waited for its lock: fire's overlap record tells.
func (r *recorder) job(job string) cron.Job {
	return cron.FuncJob(func() {
		r.mu.Lock()
		f := r.last[job]
		r.mu.Unlock()
		if r.runTick != nil {
			if tick, ok := r.runTick(job); ok {
				f.tick = tick.Add(-r.offset).UnixMicro()
			}
		}
		start, work := time.Now(), r.work()
		r.line("run %s %s %d %d %d %d", job, r.name, f.tick, f.at.UnixMicro(), start.UnixMicro(), start.Add(work).UnixMicro())
		time.Sleep(work)
	})
}

// observe records the lock's outcome of job's fire under way (the lock's
// observer, called on the fire's goroutine), named by the scheduled time
// it claimed (less the instance's offset), or by the fire's tick when it
// claimed none: a run is told when it ends, and another fire of the job
// may have begun meanwhile.
func (r *recorder) observe(job, outcome string, claimed time.Time) {
	r.mu.Lock()
	tick := r.last[job].tick
	r.mu.Unlock()
	if !claimed.IsZero() {
		tick = claimed.Add(-r.offset).UnixMicro()
	}
	r.line("obs %s %s %d %s", job, r.name, tick, outcome)
}

// DebugEnv, set in a worker's environment, has it log at Debug level.
const DebugEnv = "CRONFLEET_DEBUG"
