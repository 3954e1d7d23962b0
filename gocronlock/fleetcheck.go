package gocronlock

import (
	"context"
	"regexp"
	"sync"

	"github.com/tierlock/tierlock/runonce"
)

// The check of a job's key, gocron's own: gocron names a job without
// gocron.WithName after its function, so jobs made by one closure share a
// name, and so one lock (TestUnnamedJobsWarned). The checks of the fleet's
// envelope, which runonce's state shows whatever the scheduler, are
// runonce's (its envelope.go).

// keyCheck is the state of the check for one key: the jobs that call Lock
// with it. gocron passes a job's own context to Lock, one per job: two
// contexts are two jobs.
type keyCheck struct {
	mu       sync.Mutex
	firstCtx context.Context
	shared   bool
	named    sync.Once
}

// badKey tells of a job whose name cannot be a key, which never runs, so
// that it does not fail unheard: once at Error, and to the observer at
// each tick, as cronlock does (TestBadKeyTold). Claim refused it before
// its report.
func (l *Locker) badKey(key string, err error) {
	l.mu.Lock()
	c := l.keys[key]
	if c == nil {
		c = &keyCheck{}
		l.keys[key] = c
	}
	l.mu.Unlock()
	c.named.Do(func() {
		l.log.Error("job name cannot be a key: not run; give the job a shorter name (gocron.WithName)", "job", key, "err", err)
	})
	l.r.Observe(runonce.Event{Job: key, Outcome: runonce.Failed, Err: err})
}

// funcName matches the name gocron gives a job without gocron.WithName:
// its function's, which for a closure ends in .func<N> (main.main.func3).
var funcName = regexp.MustCompile(`\.func\d+(\.\d+)*$`)

// checkKey warns once if key is gocron's default name for a closure, and
// once, louder, if two jobs of this scheduler (two contexts, both live)
// share it.
func (l *Locker) checkKey(ctx context.Context, key string) {
	l.mu.Lock()
	c := l.keys[key]
	if c == nil {
		c = &keyCheck{}
		l.keys[key] = c
	}
	l.mu.Unlock()
	log := l.log
	c.named.Do(func() {
		if funcName.MatchString(key) {
			log.Warn("job without a name: gocron names it after its function, and every job made by the same closure shares that name and so one lock: give each job gocron.WithName",
				"job", key)
		}
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.firstCtx == nil:
		c.firstCtx = ctx
	case ctx != c.firstCtx && c.firstCtx.Err() != nil:
		// The job of firstCtx has ended before this one called: replaced
		// by gocron's Scheduler.Update (which waits for the old job's
		// context to be cancelled before it makes the new one), or removed
		// and made again. One job after another is not two jobs.
		c.firstCtx = ctx
	case ctx != c.firstCtx && !c.shared:
		c.shared = true
		log.Error("several jobs of this scheduler share one lock key: they run as one job, one of them per tick; gocron names a job without gocron.WithName after its function, so give each job a name of its own",
			"job", key)
	}
}
