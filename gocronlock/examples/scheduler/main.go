// Command scheduler is a gocron v2 scheduler that runs its jobs once per
// tick however many copies of it run: start it in two or three terminals
// (go run ./examples/scheduler, from the gocronlock directory) and each
// tick of each job prints in one of them.
//
// With -elector the copies elect a leader that runs every job instead; stop
// the leader (Ctrl-C, or kill -9 to see a session timeout) and another
// takes over.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

func main() {
	servers := flag.String("zk", "127.0.0.1:2181", "ZooKeeper servers, host:port,...")
	root := flag.String("root", "/gocronlock-example", "the fleet's ZooKeeper path")
	every := flag.Duration("every", 5*time.Second, "the jobs' period")
	elector := flag.Bool("elector", false, "elect a leader that runs every job, instead of a lock per tick")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, strings.Split(*servers, ","), *root, *every, *elector); err != nil {
		log.Fatal(err)
	}
}

// run schedules the jobs until ctx ends, printing their runs to out.
func run(ctx context.Context, out io.Writer, servers []string, root string, every time.Duration, elect bool) error {
	dial, cancel := context.WithTimeout(ctx, 5*time.Second)
	s, err := zklock.Connect(dial, servers, zklock.WithSessionTimeout(4*time.Second))
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()
	distributed, locker, closeIt, err := distribute(s, out, root, every, elect)
	if err != nil {
		return err
	}
	defer closeIt()
	sched, err := gocron.NewScheduler(distributed)
	if err != nil {
		return err
	}
	if locker != nil {
		locker.Attach(sched) // each run's tick: a late one (after a stop) is stale, not run again
	}
	// Every copy's ticks start on a common boundary, so that they fire
	// close together: the window must exceed that spread. Each job's is
	// the first boundary a quarter of a period ahead when it is made:
	// gocron refuses a start in the past, which one boundary for all
	// three became on a loaded machine (make test run 121).
	var start time.Time
	for _, name := range []string{"invoices", "reports", "cleanup"} {
		task := gocron.NewTask(func() { fmt.Fprintln(out, ranLine(locker, name)) })
		start = time.Now().Add(every / 4).Truncate(every).Add(every)
		if _, err := sched.NewJob(gocron.DurationJob(every), task, gocron.WithName(name),
			gocron.WithStartAt(gocron.WithStartDateTime(start))); err != nil {
			return err
		}
	}
	sched.Start()
	fmt.Fprintf(out, "scheduling 3 jobs every %v from %s; Ctrl-C stops\n", every, start.Format("15:04:05"))
	<-ctx.Done()
	return sched.Shutdown()
}

// ranLine is what a run prints: when it ran and, under the Locker, the
// tick it runs (a tick fired late runs late, but it is still its own tick).
func ranLine(locker *gocronlock.Locker, job string) string {
	line := fmt.Sprintf("%s %s: ran", time.Now().Format("15:04:05.000"), job)
	if locker == nil {
		return line
	}
	if tick, ok := runonce.TickOf(locker.RunContext(job)); ok {
		line += " the tick of " + tick.Format("15:04:05")
	}
	return line
}

// distribute returns the scheduler option that shares the jobs with the
// other copies, the Locker if it is one, and what closes it.
func distribute(s *zklock.Session, out io.Writer, root string, every time.Duration, elect bool) (gocron.SchedulerOption, *gocronlock.Locker, func() error, error) {
	if elect {
		e, err := gocronlock.NewElector(s, root+"/election",
			gocronlock.WithLeaderHandler(func(leading bool) { fmt.Fprintln(out, "leading:", leading) }))
		if err != nil {
			return nil, nil, nil, err
		}
		return gocron.WithDistributedElector(e), nil, e.Close, nil
	}
	// Half the period: copies whose timers fire up to every/2 apart still
	// run each tick once.
	l, err := gocronlock.NewLocker(s, root+"/jobs", runonce.WithWindow(every/2))
	if err != nil {
		return nil, nil, nil, err
	}
	return gocron.WithDistributedLocker(l), l, l.Close, nil
}
