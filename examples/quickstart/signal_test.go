package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// Ctrl-C while the program waits for a job's lock (another process holds
// it) ends the program with status 0: an interrupt is how one stops it,
// not an error.
func TestInterruptWhileWaitingExitsZero(t *testing.T) {
	servers := zktest.Servers(t)
	s := zktest.Connect(t, servers)
	jobs, err := tier.NewRegistry(s, jobsRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer jobs.Close()
	held, err := jobs.Acquire(zktest.Context(t, 30*time.Second), "invoices")
	if err != nil {
		t.Fatal(err)
	}
	defer jobs.Release(held)
	c := startChild(t, mainChild, "-zk "+strings.Join(servers, ","))
	queued(t, s, "invoices", 2) // the program waits behind us
	c.signal(t, os.Interrupt)
	if code := c.exitCode(t, 20*time.Second); code != 0 {
		t.Errorf("interrupted while it waited, the program exited %d, want 0; stderr:\n%s", code, c.stderr.String())
	}
}

// Ctrl-C while the program holds a job's lock ends it with status 0 too.
func TestInterruptWhileHoldingExitsZero(t *testing.T) {
	c := startChild(t, mainChild, "-zk "+strings.Join(zktest.Servers(t), ","))
	c.waitLine(t, ": done", 30*time.Second) // its goroutines hold keys now
	c.signal(t, os.Interrupt)
	if code := c.exitCode(t, 20*time.Second); code != 0 {
		t.Errorf("interrupted while it held a job, the program exited %d, want 0; stderr:\n%s", code, c.stderr.String())
	}
}
