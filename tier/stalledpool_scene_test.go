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
	const timeout = 4 * time.Second // 20 ticks of the test servers' 200 ms: their maxSessionTimeout
	servers, root := zktest.Servers(t), zktest.Path(t)
	keys := []string{"invoices", "reports", "cleanup", "billing", "backups", "audit", "mail", "search"}
	paths := make([]string, len(keys))
	for i, k := range keys {
		paths[i] = root + "/" + k
	}
	ctx := ctxT(t, time.Minute)

	// The copy that holds every key.
	first := connect(t, servers, zklock.WithSessionTimeout(timeout), zklock.WithLogger(quietLog))
	firstLocks, err := tier.NewRegistry(first, root)
	if err != nil {
		t.Fatal(err)
	}
	defer firstLocks.Close()
	held := make([]context.Context, len(keys))
	for i, k := range keys {
		if held[i], err = firstLocks.Acquire(ctx, k); err != nil {
			t.Fatal(err)
		}
	}

	// The copy that is killed, queued on every key.
	proc, err := child.Start(child.Spec{
		Role: stalledPoolRole, Args: []string{"-test.run=^$"}, Stderr: os.Stderr,
		Task: stalledPoolTask{Servers: servers, Root: root, Keys: keys, Goroutines: 3, SessionTimeout: timeout},
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
	queued := func(n int) func() bool {
		return func() bool {
			for _, p := range paths {
				if len(children(t, first.Conn(), p)) != n {
					return false
				}
			}
			return true
		}
	}
	eventually(t, 20*time.Second, "the copy queued on every key", queued(2))

	// The survivor, queued behind the copy on every key.
	buf := &zktest.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var mu sync.Mutex
	var told []zklock.Stall // what the stall handler was told
	survivor := connect(t, servers, zklock.WithSessionTimeout(timeout), zklock.WithLogger(log), zklock.WithStallHandler(func(st zklock.Stall) {
		mu.Lock()
		told = append(told, st)
		mu.Unlock()
	}))
	locks, err := tier.NewRegistry(survivor, root)
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close()
	got := make(chan error, len(keys))
	for _, k := range keys {
		go func() {
			h, err := locks.Acquire(ctx, k)
			if err == nil {
				err = locks.Release(h)
			}
			got <- err
		}()
	}
	eventually(t, 20*time.Second, "the survivor queued on every key", queued(3))

	proc.Kill()
	if err := proc.Wait(); err == nil || !strings.Contains(err.Error(), syscall.SIGKILL.String()) {
		t.Fatalf("the copy: %v", err)
	}
	killed := time.Now()
	for _, h := range held {
		if err := firstLocks.Release(h); err != nil {
			t.Fatal(err)
		}
	}
	for range keys {
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("every key acquired by the survivor %v after the kill", time.Since(killed).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond) // a second line, were there one

	begun, ended := stallLines(t, buf.String(), "locks stalled behind session "+dead), stallLines(t, buf.String(), "locks no longer stalled behind session "+dead)
	if len(begun) != 1 || len(ended) != 1 {
		t.Fatalf("the stall behind %s told %d times and its end %d times, want once each:\n%s", dead, len(begun), len(ended), buf)
	}
	b, e := begun[0], ended[0]
	t.Logf("the survivor's log:\n%s", buf)
	if !strings.Contains(b.Msg, "no connection") || b.Session != dead || !slices.Equal(b.Locks, slices.Sorted(slices.Values(paths))) {
		t.Errorf("the stall's line: %+v, want %s with no connection, every key %v", b, dead, paths)
	}
	if want := fmt.Sprintf("%d@", proc.Pid()); !strings.HasPrefix(b.Holder, want) || b.Expires == nil {
		t.Errorf("the stall's line names holder %q (want %s...), expires within %v", b.Holder, want, b.Expires)
	}
	if !strings.Contains(e.Msg, "went") || !slices.Equal(e.Locks, b.Locks) {
		t.Errorf("the end's line: %+v, want its nodes went, on %v", e, b.Locks)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 2 || fmt.Sprintf("0x%x", told[0].Session) != dead || !told[0].Disconnected || told[0].Ended ||
		len(told[0].Locks) != len(keys) || !told[1].Ended || told[0].ExpiresWithin == 0 {
		t.Errorf("the stall handler was told %+v, want the stall behind %s on every key, then its end", told, dead)
	}
	if n := len(stallLines(t, buf.String(), "stalled behind")); n != 2 {
		t.Errorf("%d lines of stalls, want 2:\n%s", n, buf)
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
func stallLines(t *testing.T, log, s string) []stallLine {
	t.Helper()
	var out []stallLine
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var v stallLine
		if err := json.Unmarshal([]byte(l), &v); err == nil && strings.Contains(v.Msg, s) {
			out = append(out, v)
		}
	}
	return out
}
