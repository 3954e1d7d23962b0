package tier_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// stallRole is the child of TestStoppedWorkerToldItsHoldsLost: a worker
// pool the test stops (SIGSTOP) past its session.
const stallRole = "tier-stalled-pool"

// stallTask is what the stopped pool is told.
type stallTask struct {
	Servers []string
	Root    string
	Keys    int
	Session time.Duration
	Job     time.Duration
}

// stallJob is what one job of the stopped pool reports once its timer
// fired: whether its held context was done by then, and what each
// question asked after it answered.
type stallJob struct {
	Key                                int
	Asked                              time.Time // when the job asked, on the wall clock the parent reads too
	DoneFirst                          bool
	Cause, Token, Txn, Release         string
	CauseLost, TokenLost, TxnLost, Rel bool
}

// stallChildMain is a worker pool: one job per key, each holding its key
// through one tier.Registry while its timer runs, then releasing it; every
// other job first asks what a job may ask as it finishes (its context's
// cause, the token a fenced write carries, a guarded write). The session
// logs to stdout.
func stallChildMain() int {
	var task stallTask
	if err := child.Task(&task); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out sync.Mutex
	log := slog.New(slog.NewJSONHandler(lockedWriter{&out, os.Stdout}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := zklock.Connect(ctx, task.Servers, zklock.WithSessionTimeout(task.Session), zklock.WithLogger(log))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	reg, err := tier.NewRegistry(s, task.Root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer reg.Close()
	var held, done sync.WaitGroup
	held.Add(task.Keys)
	done.Add(task.Keys)
	all := make(chan struct{}) // every key held: the jobs' timers start

	for k := range task.Keys {
		go func() {
			defer done.Done()
			report := stallJob{Key: k}
			defer func() {
				b, _ := json.Marshal(report)
				out.Lock()
				fmt.Println("job " + string(b))
				out.Unlock()
			}()
			h, err := reg.Acquire(ctx, fmt.Sprint(k))
			held.Done()
			if err != nil {
				report.Release = "acquire: " + err.Error()
				return
			}
			<-all
			job := time.NewTimer(task.Job)
			defer job.Stop()
			select {
			case <-job.C:
			case <-h.Done():
				report.DoneFirst = true
			}
			report.Asked = time.Now()
			if k%2 == 1 {
				// A job that only releases as it finishes, as the
				// report's pool did.
				relErr := reg.Release(h)
				report.Release, report.Rel = fmt.Sprint(relErr), errors.Is(relErr, tier.ErrLockLost)
				report.CauseLost, report.TokenLost, report.TxnLost = true, true, true // not asked
				return
			}
			cause := context.Cause(h)
			_, tokErr := reg.Token(h)
			_, txnErr := reg.Txn(h)
			relErr := reg.Release(h)
			report.Cause, report.CauseLost = fmt.Sprint(cause), errors.Is(cause, tier.ErrLockLost)
			report.Token, report.TokenLost = fmt.Sprint(tokErr), errors.Is(tokErr, tier.ErrLockLost)
			report.Txn, report.TxnLost = fmt.Sprint(txnErr), errors.Is(txnErr, tier.ErrLockLost)
			report.Release, report.Rel = fmt.Sprint(relErr), errors.Is(relErr, tier.ErrLockLost)
		}()
	}
	held.Wait()
	close(all)
	out.Lock()
	fmt.Println("pool-holds")
	out.Unlock()
	done.Wait()
	_, _ = os.Stdin.Read(make([]byte, 1)) // until the parent closes it
	return 0
}

// lockedWriter writes under mu: the jobs' reports and the log share stdout
// line by line.
type lockedWriter struct {
	mu *sync.Mutex
	w  *os.File
}

func (lw lockedWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

// TestStoppedWorkerToldItsHoldsLost: a worker pool holding 16 keys through
// tier (session timeout 2 s) is stopped with SIGSTOP for 6 s, its jobs'
// timers (2 s, started once every key is held) due while it is stopped; another process takes every key
// once the server expired the stopped session. When the pool resumes, its
// jobs' timers fire in no set order with its lease's timer and the
// connection's end: every job, whatever it saw first, is told its hold was
// lost, by Release (an error wrapping ErrLockLost), and, when it asks
// before, by its context's cause, by the token its fenced write would
// carry and by a guarded write (refused); the stall's lines say the stall
// and the holds it ended. On the code before, the jobs whose timers came first were told
// nothing: nil from Release, their writes applied, and the stall's outage
// line said holds_ended=0.
func TestStoppedWorkerToldItsHoldsLost(t *testing.T) {
	if testing.Short() {
		t.Skip("a 6-s stop: about 10 s")
	}
	const (
		keys    = 16
		session = 2 * time.Second
		stopFor = 6 * time.Second
	)
	servers := zktest.Servers(t)
	root := zktest.Path(t)
	p, err := child.Start(child.Spec{Role: stallRole, Args: []string{"-test.run=^$"},
		Task: stallTask{Servers: servers, Root: root, Keys: keys, Session: session, Job: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	lines := collectLines(p)
	defer func() {
		_ = p.CloseStdin()
		_ = p.Wait()
		if t.Failed() {
			t.Logf("the pool's lines:\n%s\n%s", strings.Join(lines.all(), "\n"), p.Describe("the pool"))
		}
	}()
	lines.await(t, 30*time.Second, func(l string) bool { return l == "pool-holds" })
	if err := syscall.Kill(p.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// Another process (this one) takes every key while the pool is stopped.
	s := connect(t, servers, zklock.WithSessionTimeout(session))
	reg, err := tier.NewRegistry(s, root)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ctx := ctxT(t, stopFor)
	var taken time.Duration
	for k := range keys {
		h, err := reg.Acquire(ctx, fmt.Sprint(k))
		if err != nil {
			t.Fatalf("key %d not taken while the pool was stopped: %v", k, err)
		}
		defer reg.Release(h)
	}
	taken = time.Since(stopped)
	time.Sleep(stopFor - taken)
	if err := syscall.Kill(p.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stop := time.Since(stopped)
	t.Logf("stopped %v; every key taken by another process %v after the stop", stop.Round(time.Millisecond), taken.Round(time.Millisecond))
	jobs := 0
	lines.await(t, 30*time.Second, func(l string) bool {
		if strings.HasPrefix(l, "job ") {
			jobs++
		}
		return jobs == keys
	})
	for _, l := range lines.all() {
		if !strings.HasPrefix(l, "job ") {
			continue
		}
		var j stallJob
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "job ")), &j); err != nil {
			t.Fatal(err)
		}
		if !j.CauseLost || !j.TokenLost || !j.TxnLost || !j.Rel {
			t.Errorf("job %d (its context done before its timer: %v; asked %v after the stop) told: cause %s, token %s, guarded write %s, Release %s; want each the loss",
				j.Key, j.DoneFirst, j.Asked.Sub(stopped).Round(time.Millisecond), j.Cause, j.Token, j.Txn, j.Release)
		}
	}
	// The stall's lines: the lapse's or the outage's, each with how long
	// the pool was stopped, and the holds the stall ended, all of them.
	var told []map[string]any
	for _, l := range lines.all() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["stalled_for"] != nil {
			told = append(told, m)
		}
	}
	if len(told) == 0 {
		t.Fatal("no line says the stall")
	}
	for _, m := range told {
		stalled := time.Duration(m["stalled_for"].(float64))
		n, _ := m["holds_ended"].(float64)
		t.Logf("%s: stalled_for=%v holds_ended=%v", m["msg"], stalled, n)
		if stalled < stopFor-time.Second || stalled > stop+time.Second {
			t.Errorf("stalled_for=%v for a stop of %v: %v", stalled, stop, m)
		}
		if int(n) != keys {
			t.Errorf("holds_ended=%v; the stall ended %d: %v", n, keys, m)
		}
	}
}

// childLines keeps a child's stdout lines as they come.
type childLines struct {
	mu   sync.Mutex
	l    []string
	more chan struct{} // signalled at each line
}

// collectLines reads p's lines on a goroutine of its own until p's stdout
// ends.
func collectLines(p *child.Proc) *childLines {
	c := &childLines{more: make(chan struct{}, 1)}
	go func() {
		for l := range p.Lines() {
			c.mu.Lock()
			c.l = append(c.l, string(l))
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default:
			}
		}
	}()
	return c
}

func (c *childLines) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.l...)
}

// await waits until ok is true of a line (each line asked once, in order),
// failing the test after d.
func (c *childLines) await(t *testing.T, d time.Duration, ok func(string) bool) {
	t.Helper()
	timeout := time.After(d)
	for i := 0; ; {
		for l := c.all(); i < len(l); i++ {
			if ok(l[i]) {
				return
			}
		}
		select {
		case <-c.more:
		case <-timeout:
			t.Fatalf("waited %v for a line of the pool", d)
		}
	}
}
