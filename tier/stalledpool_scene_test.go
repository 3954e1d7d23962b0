package tier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
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

// stalledPoolRole is the role of a copy of a keyed pool that queues on
// every key and is killed. Its dispatch is in an init function of this
// file, so that the shared TestMain is not touched.
const stalledPoolRole = "tier-stalled-pool-copy"

func init() { child.Dispatch(map[string]func() int{stalledPoolRole: stalledPoolCopyMain}) }

// stalledPoolTask is what the copy does: Goroutines per key wait for the
// keys under Root, on one session of SessionTimeout.
type stalledPoolTask struct {
	Servers        []string
	Root           string
	Keys           []string
	Goroutines     int
	SessionTimeout time.Duration
}

// stalledPoolCopyMain prints its session's id ("session 0x..."), then
// waits for every key from Goroutines goroutines each, until killed.
func stalledPoolCopyMain() int {
	var task stalledPoolTask
	if err := child.Task(&task); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := zklock.Connect(ctx, task.Servers, zklock.WithLogger(quietLog), zklock.WithSessionTimeout(task.SessionTimeout))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	locks, err := tier.NewRegistry(s, task.Root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("session 0x%x\n", s.SessionID())
	var wg sync.WaitGroup
	for _, key := range task.Keys {
		for range task.Goroutines {
			wg.Go(func() {
				if held, err := locks.Acquire(ctx, key); err == nil {
					fmt.Println("acquired", key) // the parent holds every key until this copy is killed
					_ = locks.Release(held)
				}
			})
		}
	}
	wg.Wait()
	return 3
}

// A copy of a keyed pool is killed (SIGKILL) while it waits on every key,
// behind another copy that holds them all. That copy releases: the killed
// copy's nodes lead every queue, and hold it until its session expires.
// The surviving copy, waiting on every key behind them, says so once: one
// Warn naming the dead session, its pid@host and every key it stalls; and
// once when its nodes went, as the session expired.
func TestKilledCopyStallsToldOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a copy of a pool killed, its session's expiry waited out, about 6 s")
	}
	sc := newStallScene(t, []string{"invoices", "reports", "cleanup", "billing", "backups", "audit", "mail", "search"})
	proc, dead := sc.startCopy()
	sc.eventuallyQueued(2, "the copy queued on every key")
	got := sc.survivorWaits()
	sc.eventuallyQueued(3, "the survivor queued on every key")

	proc.Kill()
	if err := proc.Wait(); err == nil || !strings.Contains(err.Error(), syscall.SIGKILL.String()) {
		t.Fatalf("the copy: %v", err)
	}
	killed := time.Now()
	sc.releaseFirst()
	for range sc.keys {
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("every key acquired by the survivor %v after the kill", time.Since(killed).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond) // a second line, were there one
	t.Logf("the survivor's log:\n%s", sc.buf)
	sc.checkLines(dead, proc.Pid())
	sc.checkTold(dead)
}

// stallScene is TestKilledCopyStallsToldOnce's pool: a copy that holds
// every key, and a survivor whose log and stall handler are kept.
type stallScene struct {
	t          *testing.T
	ctx        context.Context
	servers    []string
	root       string
	keys       []string
	paths      []string // the keys' lock paths, sorted
	first      *zklock.Session
	firstLocks *tier.Registry
	held       []context.Context // first's holds

	buf  *zktest.SyncBuffer // the survivor's log
	mu   sync.Mutex
	told []zklock.Stall // what the survivor's stall handler was told
}

// stallTimeout is the scene's session timeout: 20 ticks of the test
// servers' 200 ms.
const stallTimeout = 4 * time.Second

// newStallScene makes the copy that holds every one of keys.
func newStallScene(t *testing.T, keys []string) *stallScene {
	sc := &stallScene{t: t, ctx: ctxT(t, time.Minute), servers: zktest.Servers(t), root: zktest.Path(t), keys: keys, buf: &zktest.SyncBuffer{}}
	for _, k := range keys {
		sc.paths = append(sc.paths, sc.root+"/"+k)
	}
	slices.Sort(sc.paths)
	sc.first = connect(t, sc.servers, zklock.WithSessionTimeout(stallTimeout), zklock.WithLogger(quietLog))
	var err error
	if sc.firstLocks, err = tier.NewRegistry(sc.first, sc.root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.firstLocks.Close() })
	for _, k := range keys {
		h, err := sc.firstLocks.Acquire(sc.ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		sc.held = append(sc.held, h)
	}
	return sc
}

// startCopy starts the copy that queues on every key and is killed, and
// returns it with its session's id.
func (sc *stallScene) startCopy() (*child.Proc, string) {
	t := sc.t
	proc, err := child.Start(child.Spec{
		Role: stalledPoolRole, Args: []string{"-test.run=^$"}, Stderr: os.Stderr,
		Task: stalledPoolTask{Servers: sc.servers, Root: sc.root, Keys: sc.keys, Goroutines: 3, SessionTimeout: stallTimeout},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Kill(); _ = proc.Wait() })
	line, _ := zktest.Await(t, "the copy's session", proc.Lines())
	dead, ok := strings.CutPrefix(string(line), "session ")
	if !ok {
		t.Fatalf("the copy said %q: %s", line, proc.Describe("copy"))
	}
	return proc, dead
}

// eventuallyQueued waits until every key has n nodes.
func (sc *stallScene) eventuallyQueued(n int, what string) {
	eventually(sc.t, 20*time.Second, what, func() bool {
		for _, p := range sc.paths {
			if len(children(sc.t, sc.first.Conn(), p)) != n {
				return false
			}
		}
		return true
	})
}

// survivorWaits starts the survivor's waits, one per key, each of which
// releases at once; their outcomes arrive on the channel returned.
func (sc *stallScene) survivorWaits() <-chan error {
	t := sc.t
	log := slog.New(slog.NewJSONHandler(sc.buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	survivor := connect(t, sc.servers, zklock.WithSessionTimeout(stallTimeout), zklock.WithLogger(log), zklock.WithStallHandler(func(st zklock.Stall) {
		sc.mu.Lock()
		sc.told = append(sc.told, st)
		sc.mu.Unlock()
	}))
	locks, err := tier.NewRegistry(survivor, sc.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { locks.Close() })
	got := make(chan error, len(sc.keys))
	for _, k := range sc.keys {
		go func() {
			h, err := locks.Acquire(sc.ctx, k)
			if err == nil {
				err = locks.Release(h)
			}
			got <- err
		}()
	}
	return got
}

// releaseFirst releases the first copy's holds.
func (sc *stallScene) releaseFirst() {
	for _, h := range sc.held {
		if err := sc.firstLocks.Release(h); err != nil {
			sc.t.Fatal(err)
		}
	}
}

// checkLines checks the survivor's log: the stall behind dead, the
// session of the process pid, told once with every key, and its end once.
func (sc *stallScene) checkLines(dead string, pid int) {
	t, log := sc.t, sc.buf.String()
	begun, ended := stallLines(log, "locks stalled behind session "+dead), stallLines(log, "locks no longer stalled behind session "+dead)
	if len(begun) != 1 || len(ended) != 1 || len(stallLines(log, "stalled behind")) != 2 {
		t.Fatalf("the stall behind %s told %d times and its end %d times, want once each, and nothing else:\n%s", dead, len(begun), len(ended), log)
	}
	b, e := begun[0], ended[0]
	if !strings.Contains(b.Msg, "no connection") || b.Session != dead || !slices.Equal(b.Locks, sc.paths) {
		t.Errorf("the stall's line: %+v, want %s with no connection, every key %v", b, dead, sc.paths)
	}
	if want := fmt.Sprintf("%d@", pid); !strings.HasPrefix(b.Holder, want) || b.Expires == nil {
		t.Errorf("the stall's line names holder %q (want %s...), expires within %v", b.Holder, want, b.Expires)
	}
	if !strings.Contains(e.Msg, "went") || !slices.Equal(e.Locks, b.Locks) {
		t.Errorf("the end's line: %+v, want its nodes went, on %v", e, b.Locks)
	}
}

// checkTold checks what the survivor's stall handler was told: the stall
// behind dead on every key, then its end.
func (sc *stallScene) checkTold(dead string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	told := sc.told
	ok := len(told) == 2 && fmt.Sprintf("0x%x", told[0].Session) == dead && told[0].Disconnected && !told[0].Ended &&
		slices.Equal(told[0].Locks, sc.paths) && told[0].ExpiresWithin > 0 && told[1].Ended
	if !ok {
		sc.t.Errorf("the stall handler was told %+v, want the stall behind %s on every key, then its end", told, dead)
	}
}

// stallLine is a stall's line as the JSON handler wrote it.
type stallLine struct {
	Msg     string   `json:"msg"`
	Session string   `json:"session"`
	Holder  string   `json:"holder"`
	Locks   []string `json:"locks"`
	Expires any      `json:"expires_within"`
}

// stallLines are the lines of log whose message contains s.
func stallLines(log, s string) []stallLine {
	var out []stallLine
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var v stallLine
		if err := json.Unmarshal([]byte(l), &v); err == nil && strings.Contains(v.Msg, s) {
			out = append(out, v)
		}
	}
	return out
}
