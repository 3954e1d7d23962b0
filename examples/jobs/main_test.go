package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The program runs against one real ZooKeeper shared by the package's
// tests (the test may use internal/; the program may not); goleak checks
// that it leaves no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

// TestTwoProcesses runs the program twice at once, each run with its own
// ZooKeeper session as a process would have, one trying and skipping and
// one waiting, against one store: every job run writes with its fencing
// token, so two holders of one job at once would show up as a refused
// write, and run would fail.
func TestTwoProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := newStore()
	common := []string{
		"-zk", strings.Join(zktest.Servers(t), ","),
		"-root", fmt.Sprintf("/tierlock-examples-test/jobs-%d", os.Getpid()),
		"-workers", "4", "-jobs", "2", "-work", "30ms", "-duration", "1500ms",
	}
	policies := [][]string{{"-wait", "0"}, {"-wait", "1s"}}
	outs := make([]readyWriter, len(policies))
	errs := make([]error, len(policies))
	var wg sync.WaitGroup
	start := time.Now()
	stalls := stallMeter()
	for i, p := range policies {
		wg.Go(func() { errs[i] = run(ctx, slices.Concat(common, p), &outs[i], st) })
	}
	zktest.Wait(t, "the two processes", &wg)
	stalled := stalls()
	for i, p := range policies {
		t.Run(strings.Join(p, " "), func(t *testing.T) {
			out, ready := outs[i].String(), outs[i].ready().Sub(start)
			t.Logf("output (its first line %v after the start, the machine's longest late wake %v):\n%s",
				ready.Round(time.Millisecond), stalled.Round(time.Millisecond), out)
			if errs[i] != nil {
				t.Fatalf("run: %v", errs[i])
			}
			if strings.Contains(out, "refused") || strings.Contains(out, "failed") {
				t.Error("a write was refused or a run failed")
			}
			if !strings.Contains(out, "ran it, fencing token ") {
				// The 1.5-s run must connect, queue and be granted a job
				// held 30 ms at a time: a process that spent half its run
				// connecting, or a machine that held a goroutine 250 ms
				// or more, leaves the scene nothing to show (no write was
				// refused: checked above, whatever the machine).
				if ready >= 750*time.Millisecond || stalled >= 250*time.Millisecond {
					t.Skipf("no job ran: the process was ready %v into its 1.5-s run, the machine's longest late wake %v; the scene needs it ready within 750 ms and wakes within 250 ms",
						ready.Round(time.Millisecond), stalled.Round(time.Millisecond))
				}
				t.Error("no job ran")
			}
		})
	}
}

// readyWriter is a process's output that notes when its first line came:
// the program writes it once connected.
type readyWriter struct {
	mu    sync.Mutex
	b     bytes.Buffer
	first time.Time
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first.IsZero() {
		w.first = time.Now()
	}
	return w.b.Write(p)
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// ready is when the first line came (now, if none did).
func (w *readyWriter) ready() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first.IsZero() {
		return time.Now()
	}
	return w.first
}

// stallMeter measures how late the machine wakes a goroutine: the longest
// oversleep of a 5-ms sleep loop, from the call until stop's.
func stallMeter() (stop func() time.Duration) {
	const nap = 5 * time.Millisecond
	done, worst := make(chan struct{}), make(chan time.Duration, 1)
	go func() {
		var w time.Duration
		for {
			select {
			case <-done:
				worst <- w
				return
			default:
			}
			begin := time.Now()
			time.Sleep(nap)
			w = max(w, time.Since(begin)-nap)
		}
	}()
	return func() time.Duration {
		close(done)
		return <-worst
	}
}

func TestStore(t *testing.T) {
	t.Run("refuses a lower token", func(t *testing.T) {
		s := newStore()
		_ = s.Write("job-1", 10)
		if err := s.Write("job-1", 9); !errors.Is(err, errStale) {
			t.Errorf("token 9 after 10: %v, want errStale", err)
		}
	})
	t.Run("accepts an equal token", func(t *testing.T) {
		s := newStore()
		_ = s.Write("job-1", 10)
		if err := s.Write("job-1", 10); err != nil {
			t.Errorf("token 10 after 10: %v", err)
		}
	})
	t.Run("accepts a higher token", func(t *testing.T) {
		s := newStore()
		_ = s.Write("job-1", 10)
		if err := s.Write("job-1", 11); err != nil {
			t.Errorf("token 11 after 10: %v", err)
		}
	})
	t.Run("keys are independent", func(t *testing.T) {
		s := newStore()
		_ = s.Write("job-1", 10)
		if err := s.Write("job-2", 5); err != nil {
			t.Errorf("job-2 token 5 after job-1 token 10: %v", err)
		}
	})
}

// -zk defaults to $TIERLOCK_ZK_SERVERS, else 127.0.0.1:2181; an empty
// list is refused, naming the flag and the variable.
func TestServersDefault(t *testing.T) {
	t.Setenv("TIERLOCK_ZK_SERVERS", "")
	if got := defaultServers(); got != "127.0.0.1:2181" {
		t.Errorf("default %q, want 127.0.0.1:2181", got)
	}
	t.Setenv("TIERLOCK_ZK_SERVERS", "zk1:2181,zk2:2181")
	if got := defaultServers(); got != "zk1:2181,zk2:2181" {
		t.Errorf("default %q, want $TIERLOCK_ZK_SERVERS", got)
	}
	err := run(context.Background(), []string{"-zk", " , "}, &bytes.Buffer{}, newStore())
	if err == nil || !strings.Contains(err.Error(), "-zk") || !strings.Contains(err.Error(), "TIERLOCK_ZK_SERVERS") {
		t.Errorf("run with an empty -zk: %v; want an error naming -zk and TIERLOCK_ZK_SERVERS", err)
	}
}

// The program, built and run as a user runs it, against a port with no
// server: its clock starts before it connects, so it fails within
// -duration (2s here, under zklock.ConnectTimeout), exit code 1, saying
// where it looked, the dial error, and how to start a server.
func TestNoServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out the program's connect bound, about 3 s")
	}
	bin := filepath.Join(t.TempDir(), "jobs")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := deadAddr(t)
	cmd := exec.Command(bin, "-duration", "2s")
	cmd.Env = append(os.Environ(), "TIERLOCK_ZK_SERVERS="+addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	t.Logf("after %v: %v\n%s", took.Round(time.Millisecond), err, stderr.String())
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want exit status 1", err)
	}
	if took > 2*time.Second+3*time.Second {
		t.Errorf("took %v; -duration was 2s", took)
	}
	for _, want := range []string{"jobs: no ZooKeeper reachable at " + addr + " within 2s", "connection refused", "scripts/zk.sh start"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"-zk", "x:1", "-jobs", "0"}, {"-zk", "x:1", "-wait", "-1s"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, newStore()); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
