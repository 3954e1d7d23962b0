package gocronlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/gocronlock"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// BenchmarkLockSkip is the cost of one attempt that finds its tick
// already run (the lock's create and delete, a read, a guarded write), in
// time and in ZooKeeper requests: what every instance but one pays per
// tick. A run pays the same and its Unlock.
func BenchmarkLockSkip(b *testing.B) {
	l, _ := newLocker(b, zktest.Path(b), runonce.WithWindow(time.Hour))
	ctx := context.Background()
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		b.Fatal(err)
	}
	zktest.ReportRequests(b, func() {
		for range b.N {
			if _, err := l.Lock(ctx, "job"); !errors.Is(err, runonce.ErrAlreadyRan) {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTick is what one tick of a job costs ZooKeeper in a fleet of
// three instances: each Locks the job in turn, as timers a few ms apart
// do; one runs it, two find it run. The window leaves room for a Lock's
// latency on a busy machine: each instance's attempt must fall in the
// first's tick. Reported per tick: the requests the
// server received (reqs/op; idle-reqs/op of them the sessions' pings and
// idle syncs, measured before, at their rate while nothing locks) and the
// transactions it committed (txns/op, read off the zxid).
func BenchmarkTick(b *testing.B) {
	const window, spacing = 100 * time.Millisecond, 200 * time.Millisecond
	root := zktest.Path(b)
	var fleet [3]*gocronlock.Locker
	for i := range fleet {
		fleet[i], _ = newLocker(b, root, runonce.WithWindow(window))
	}
	ctx := context.Background()
	tick := func() {
		ran := 0
		for _, l := range fleet {
			if ok, err := runOnce(ctx, l, "job", nil); ok {
				ran++
			} else if !errors.Is(err, runonce.ErrAlreadyRan) {
				b.Fatal(err)
			}
		}
		if ran != 1 {
			b.Fatalf("a tick ran %d times", ran)
		}
		time.Sleep(spacing) // the next tick: its runs a window and their latency after
	}
	for _, l := range fleet { // the job's nodes, each session's first lease
		if _, err := runOnce(ctx, l, "warm-up", nil); err != nil && !errors.Is(err, runonce.ErrAlreadyRan) {
			b.Fatal(err)
		}
	}
	tick()
	zxid := zxidReader(b)
	idle := idleRate(b, 2*time.Second)
	before := zxid()
	zktest.ReportRequests(b, func() {
		for range b.N {
			tick()
		}
		time.Sleep(100 * time.Millisecond) // the last Unlock's delete lands
	})
	b.ReportMetric(float64(zxid()-before-1)/float64(b.N), "txns/op")
	b.ReportMetric(idle*(b.Elapsed().Seconds()+0.1)/float64(b.N), "idle-reqs/op")
}

// idleRate is the requests per second the server receives while nothing
// locks: the sessions' pings and idle syncs, which a tick's reqs/op
// includes for the time between ticks.
func idleRate(b *testing.B, d time.Duration) float64 {
	c := zktest.Cluster(b)
	before, err := c.Counters(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(d)
	after, err := c.Counters(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return float64(after.PacketsReceived-before.PacketsReceived-int64(c.Size())) / d.Seconds()
}

// zxidReader returns what reads the zxid of a write made now, on a
// connection of its own (the write is one transaction).
func zxidReader(b *testing.B) func() int64 {
	c := zktest.Connect(b, zktest.Servers(b)).Conn()
	p := "/" + strings.ReplaceAll(strings.TrimPrefix(zktest.Path(b), "/"), "/", "-") + "-zxid"
	if _, err := c.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	return func() int64 {
		st, err := c.Set(p, nil, -1)
		if err != nil {
			b.Fatal(err)
		}
		return st.Mzxid
	}
}
