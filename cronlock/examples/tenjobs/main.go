// Command tenjobs runs ten robfig/cron jobs, every second each: run it in
// two or three terminals at once, and each tick of each job runs in one.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tierlock/tierlock/cronlock"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s, err := zklock.Connect(ctx, os.Args[1:]) // ZooKeeper's servers: go run . 127.0.0.1:2181
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	locker, err := cronlock.New(s, "/tenjobs") // one per process, the same root in every copy
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	c := cron.New(cron.WithSeconds(), locker.WithChain()) // the Locker's wrapper last in the chain, and the Cron attached: each tick claimed by its name
	for i := range 10 {
		name := fmt.Sprintf("job-%d", i) // a job's name is its key across the fleet: one per job
		job := cron.FuncJob(func() {
			tick, _ := runonce.TickOf(locker.RunContext(name)) // the tick this run is of: its scheduled second
			fmt.Println(name, "ran tick", tick.Format("15:04:05"), "at", time.Now().Format("15:04:05.000"))
		})
		if _, err := c.AddJob("* * * * * *", cronlock.Named(name, job)); err != nil {
			log.Fatal(err)
		}
	}
	c.Start()
	<-ctx.Done()      // Ctrl-C
	<-c.Stop().Done() // the runs under way end
}
