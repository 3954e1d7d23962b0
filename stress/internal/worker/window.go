package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/wire"
	"github.com/tierlock/tierlock/zklock"
)

// tally counts the ZooKeeper requests of this worker process by opcode:
// every implementation on a go-zookeeper connection dials through it
// (zklock.WithDialer, zk.WithDialer), so all are counted alike; redsync's
// go-redis client counts its commands into it too (redsync.go).
var tally = wire.New()

// meter measures the worker over the run's window [start, end] on the
// shared clock (end 0: until the run ends): what it sent, the processor
// time it used, its goroutines, its session's lease. It reads its
// counters at the window's edges, on timers, not after the run: a run
// that drains or abandons work after the window is not charged for it.
type meter struct {
	start, end int64
	im         impl

	from, to snapshot
	peak     atomic.Int64
	stop     chan struct{} // closed when the run is over
	done     chan struct{}
}

type snapshot struct {
	at    int64
	ops   proto.OpCounts
	cpu   int64
	lease zklock.LeaseStats
}

// meterPeriod is how often the goroutines are counted.
const meterPeriod = 100 * time.Millisecond

// startMeter starts measuring im over [start, end].
func startMeter(im impl, start, end int64) *meter {
	m := &meter{start: start, end: end, im: im, stop: make(chan struct{}), done: make(chan struct{})}
	go m.run()
	return m
}

func (m *meter) run() {
	defer close(m.done)
	if !m.wait(m.start) {
		// The run ended before the window began: an empty window.
		m.from = m.take()
		m.to = m.from
		return
	}
	m.from = m.take()
	defer profile(m.im)()
	m.count()
	tick := time.NewTicker(meterPeriod)
	defer tick.Stop()
	var end <-chan time.Time
	if m.end > 0 {
		t := time.NewTimer(time.Duration(m.end - exclusion.Now()))
		defer t.Stop()
		end = t.C
	}
	for {
		select {
		case <-tick.C:
			m.count()
		case <-end:
			m.count()
			m.to = m.take()
			return
		case <-m.stop:
			m.count()
			m.to = m.take()
			return
		}
	}
}

// wait sleeps until the shared clock reads at; false if the run ended
// first.
func (m *meter) wait(at int64) bool {
	d := time.Duration(at - exclusion.Now())
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.stop:
		return false
	}
}

func (m *meter) count() {
	n := int64(runtime.NumGoroutine())
	for {
		p := m.peak.Load()
		if n <= p || m.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (m *meter) take() snapshot {
	s := snapshot{at: exclusion.Now(), ops: tally.Counts(), cpu: processCPU()}
	if ss, ok := m.im.(sessioner); ok {
		s.lease = ss.session().LeaseStats()
	}
	return s
}

// finish ends the measure (if the window is still open, here) and
// returns it.
func (m *meter) finish() *proto.Window {
	close(m.stop)
	<-m.done
	w := &proto.Window{
		Start: m.from.at, End: m.to.at,
		Ops: m.to.ops.Sub(m.from.ops), Counted: tally.Connections() > 0,
		CPUNs: m.to.cpu - m.from.cpu, PeakGoroutines: int(m.peak.Load()),
		TimeoutMs: tally.Timeout().Milliseconds(),
	}
	if _, ok := m.im.(sessioner); ok {
		w.Lease = true
		w.LeaseWaits = m.to.lease.Waits - m.from.lease.Waits
		w.LeaseLapses = m.to.lease.Lapses - m.from.lease.Lapses
	}
	return w
}

// processCPU is the user + system time of this process so far, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// profile starts a CPU profile of the window when $TIERLOCK_STRESS_PROFILE
// names a directory (<dir>/<impl>-<pid>.pprof), and returns what stops it.
func profile(im impl) (stop func()) {
	dir := os.Getenv("TIERLOCK_STRESS_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%T-%d.pprof", im, os.Getpid())))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if g, err := os.Create(strings.TrimSuffix(f.Name(), ".pprof") + ".goroutines"); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(g, 1)
			g.Close()
		}
	}
}
