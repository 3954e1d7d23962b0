package fleet

import (
	"fmt"
	"io"
	"log"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/internal/hostclock"
)

// The API forms of a lock (-form): a wrapper per job, the Cron attached
// (its fires claim their ticks by name); the Cron's chain, where the lock
// has it (named too); or a wrapper per job, the Cron not attached
// (cronlock's Wrap without Attach: its claims carry no tick, decided by
// the server's clock).
const (
	FormWrap  = "wrap"
	FormChain = "chain"
	FormLoose = "loose"
)

// schedule makes c's Cron, its jobs added in c's form, attached but in
// FormLoose, not yet started.
//
// An instance whose clock is off the others' by c.clock (-clock): Go
// reads the wall clock through the vDSO, which libfaketime's preload
// cannot reach, and robfig/cron has no clock to inject. So the instance
// plays it: its timers fire c.clock early (its schedules shifted by
// -c.clock, as they would fire on a clock c.clock ahead), robfig/cron's
// Entry.Prev is then the others' time of the tick, and hostclock's offset
// (c.clock) makes runonce name the tick as this instance's clock would
// (internal/hostclock says why nothing else of runonce sees it); its
// records name the tick likewise (the recorder's offset).
func schedule(c config, lk Lock, rec *recorder, stderr io.Writer) (*cron.Cron, error) {
	hostclock.SetOffset(c.clock)
	// robfig/cron logs its errors (a job's panic) to stdout by default:
	// stderr keeps the records alone on stdout.
	opts := []cron.Option{cron.WithParser(shiftedParser{offset: c.offset - c.clock}), cron.WithLocation(time.UTC),
		cron.WithLogger(cron.PrintfLogger(log.New(stderr, "cron: ", log.LstdFlags)))}
	chain := c.form == FormChain
	switch {
	case chain && (lk.Chain == nil || lk.Named == nil):
		return nil, fmt.Errorf("-form %s: the lock has one form only", c.form)
	case chain:
		opts = append(opts, lk.Chain(rec.fireWrapper))
	case c.form != FormWrap && c.form != FormLoose:
		return nil, fmt.Errorf("-form %q: want %s, %s or %s", c.form, FormWrap, FormChain, FormLoose)
	}
	sched := cron.New(opts...)
	rec.cron, rec.runTick = sched, lk.RunTick
	for _, j := range c.jobs {
		job := rec.fire(j.Name, lk.Wrap(j.Name, rec.job(j.Name)))
		if chain {
			job = lk.Named(j.Name, rec.job(j.Name))
		}
		rec.adding = j.Name // the chain's wrappers run within AddJob
		id, err := sched.AddJob(j.Spec, job)
		if err != nil {
			return nil, err
		}
		rec.ids[j.Name] = id
	}
	if lk.Attach != nil && c.form == FormWrap {
		lk.Attach(sched)
	}
	return sched, nil
}

// fireWrapper is fire as a cron.JobWrapper, for a lock's chain: the job
// robfig/cron is adding is the one named rec.adding (AddJob applies the
// chain before it returns).
func (r *recorder) fireWrapper(next cron.Job) cron.Job { return r.fire(r.adding, next) }
