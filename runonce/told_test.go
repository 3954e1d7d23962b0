package runonce_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// What is told must be what happened.

// TestHeldNamesTheHolder: a tick lost to a held lock named the holding
// instance on the episode's first attempt only, then a lock node's name.
// Every attempt's error names the instance that holds the lock.
func TestHeldNamesTheHolder(t *testing.T) {
	root := zktest.Path(t)
	const w = 100 * time.Millisecond
	a, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("instance-a"))
	b, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("instance-b"))
	ctx := zktest.Context(t, 20*time.Second)
	held, err := a.Claim(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	for i := range 3 {
		time.Sleep(runonce.AfterWindow(w))
		_, err := runOnce(ctx, b, "job", nil)
		if !errors.Is(err, runonce.ErrLockHeld) || !strings.Contains(err.Error(), "by instance-a") {
			t.Errorf("attempt %d: %v, want ErrLockHeld naming instance-a", i+1, err)
		}
	}
}

// TestOutageNamesTheJobs: a ZooKeeper outage's lost ticks were told per
// Runner ("runs_skipped=N"), no line naming the jobs that lost them. The
// end of an outage names each job and the ticks it cost.
func TestOutageNamesTheJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an outage through a proxy, about 10 s")
	}
	p, err := faultproxy.New(zktest.Servers(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, logs := logged(t, []string{p.Addr()}, zklock.WithSessionTimeout(4*time.Second))
	l, err := runonce.New(s, zktest.Path(t), runonce.WithWindow(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stop := tickJobs(l, 3, 500*time.Millisecond)
	defer stop()
	time.Sleep(1500 * time.Millisecond)
	p.Partition(3 * time.Second)
	time.Sleep(3 * time.Second)
	p.Heal()
	var end string
	zktest.Eventually(t, 20*time.Second, "the Runner's line when ZooKeeper is back", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "ZooKeeper reachable again") {
				end = line
				return true
			}
		}
		return false
	})
	for _, job := range []string{"job-0", "job-1", "job-2"} {
		if !strings.Contains(end, job) {
			t.Errorf("the outage's end does not name %s:\n%s", job, end)
		}
	}
}
