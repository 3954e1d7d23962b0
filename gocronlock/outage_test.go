package gocronlock_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// outage is how long TestOutageLogsTwoLines cuts ZooKeeper off (issue
// 39's report: 13 s).
var outage = flag.Duration("outage", 6*time.Second, "TestOutageLogsTwoLines: how long ZooKeeper is unreachable")

// TestOutageLogsTwoLines (issue 39, item 3): ZooKeeper unreachable for
// longer than the session (a partition of 6 s, -outage; sessions of 4 s)
// under a real gocron scheduler with 10 jobs ticking every 500 ms. The Locker
// says so in one line naming ZooKeeper and in one when it is back, with
// the runs skipped; it used to warn once per job and tick ("context
// deadline exceeded"). Every warning of the session is counted.
func TestOutageLogsTwoLines(t *testing.T) {
	if testing.Short() {
		t.Skip("a 6 s outage")
	}
	p, err := faultproxy.New(zktest.Servers(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, logs := logged(t, []string{p.Addr()}, zklock.WithSessionTimeout(4*time.Second))
	l, err := gocronlock.NewLocker(s, zktest.Path(t), gocronlock.WithWindow(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sched, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := sched.NewJob(gocron.DurationJob(500*time.Millisecond), gocron.NewTask(func() {}), gocron.WithName(fmt.Sprint("job-", i))); err != nil {
			t.Fatal(err)
		}
	}
	sched.Start()
	defer sched.Shutdown()
	time.Sleep(1500 * time.Millisecond)
	p.Partition(*outage)
	time.Sleep(*outage)
	p.Heal()
	zktest.Eventually(t, 20*time.Second, "the Locker's line when ZooKeeper is back", func() bool {
		return strings.Contains(logs.String(), "ZooKeeper reachable again")
	})
	var warnings []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warnings = append(warnings, line)
		}
	}
	t.Logf("%d warnings over the outage:\n%s", len(warnings), strings.Join(warnings, "\n"))
	var ours int
	for _, w := range warnings {
		if strings.Contains(w, "component=gocronlock") {
			ours++
		}
	}
	if ours != 2 || !strings.Contains(logs.String(), "ZooKeeper unreachable") || !strings.Contains(logs.String(), "runs_skipped=") {
		t.Errorf("%d lines of the Locker's, want 2: ZooKeeper unreachable, and reachable again with the runs skipped", ours)
	}
	if len(warnings) > 6 {
		t.Errorf("%d warnings in all, want a handful", len(warnings))
	}
}
