package gocronlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// Three instances of one program (here in one process, each with its own
// session, as separate processes would have) schedule the same job; it
// runs once.
func ExampleNewLocker() {
	ctx := context.Background()
	var runs atomic.Int32
	var scheds []gocron.Scheduler
	for range 3 {
		s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer s.Close()
		// One Locker per process, on a root of the fleet's own. The window
		// (default 500 ms) must exceed the spread of the instances' timers.
		locker, err := gocronlock.NewLocker(s, "/examples/gocronlock/locker")
		if err != nil {
			fmt.Println(err)
			return
		}
		defer locker.Close()
		// The scheduler, with the Locker as its distributed locker, and
		// attached: each run claimed by its scheduled tick, once whatever
		// the hosts' and ZooKeeper's clocks; one fired late (after a stop)
		// that the fleet ran is stale, skipped rather than run again.
		sched, err := locker.NewScheduler()
		if err != nil {
			fmt.Println(err)
			return
		}
		defer sched.Shutdown()
		// The job's name is the lock's key: give every job its own.
		_, err = sched.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
			gocron.NewTask(func() { runs.Add(1) }), gocron.WithName("nightly-report"))
		if err != nil {
			fmt.Println(err)
			return
		}
		scheds = append(scheds, sched)
	}
	// A one-time job started immediately is scheduled when its scheduler
	// starts: the instances' spread is the time between their starts,
	// which must stay within the window.
	for _, sched := range scheds {
		sched.Start()
	}
	time.Sleep(time.Second)
	fmt.Println("runs:", runs.Load())
	// Output: runs: 1
}

// Two instances campaign; one leads and runs every job. When it stops
// (here: Close; a crash costs a session timeout), the other leads.
func ExampleNewElector() {
	ctx := context.Background()
	electors := make([]*gocronlock.Elector, 2)
	for i := range electors {
		s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer s.Close()
		e, err := gocronlock.NewElector(s, "/examples/gocronlock/election",
			gocronlock.WithCandidate(fmt.Sprintf("instance-%d", i)))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer e.Close()
		// Give it to the scheduler: gocron.NewScheduler(gocron.WithDistributedElector(e)).
		electors[i] = e
		if i == 0 {
			waitLeader(e) // for a known first leader in this example
		}
	}
	leader, _ := electors[1].Leader(ctx)
	fmt.Println("leader:", leader)
	_ = electors[0].Close()
	waitLeader(electors[1])
	leader, _ = electors[1].Leader(ctx)
	fmt.Println("leader:", leader)
	// Output:
	// leader: instance-0
	// leader: instance-1
}

// A job no instance schedules any more leaves its nodes below the root:
// RemoveJob deletes them, once its last run is a window and a lock
// timeout old, so that no late attempt of a tick it ran can run that tick
// again; while an instance still schedules the job it deletes nothing.
func ExampleLocker_RemoveJob() {
	ctx := context.Background()
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	locker, err := gocronlock.NewLocker(s, "/examples/gocronlock/remove",
		runonce.WithWindow(100*time.Millisecond), runonce.WithLockTimeout(200*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	// The job's last run (gocron calls Lock and Unlock).
	if lk, err := locker.Lock(ctx, "retired-report"); err == nil {
		_ = lk.Unlock(ctx)
	}
	// Later, the job gone from every instance's schedule:
	switch err := locker.RemoveJob(ctx, "retired-report"); {
	case errors.Is(err, runonce.ErrJobActive):
		fmt.Println("an instance still schedules it")
	case errors.Is(err, runonce.ErrLockHeld):
		fmt.Println("a run of it is going on: try again later")
	case err != nil:
		fmt.Println(err)
	default:
		last, _ := locker.LastRun(ctx, "retired-report")
		fmt.Println("removed; last run recorded:", !last.At.IsZero())
	}
	// Output: removed; last run recorded: false
}

// waitLeader waits up to 5 s until e leads.
func waitLeader(e *gocronlock.Elector) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if e.IsLeader(context.Background()) == nil {
			return
		}
	}
}
