package runonce_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
	"github.com/tierlock/tierlock/zklock"
)

// stallRole is the child of TestStallToldAsMeasured: an instance whose
// process the test stops.
const stallRole = "runonce-stalled"

// stallTask is what the child is told.
type stallTask struct {
	Servers []string
	Root    string
	Session time.Duration
}

// stallMain is the child: a session of task.Session, a Runner claiming a
// job every 100 ms, its logs on stdout, until its stdin closes.
func stallMain() int {
	var task stallTask
	if err := child.Task(&task); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	s, err := zklock.Connect(ctx, task.Servers, zklock.WithSessionTimeout(task.Session),
		zklock.WithLogger(slog.New(slog.NewTextHandler(os.Stdout, nil))))
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	r, err := runonce.New(s, task.Root, runonce.WithWindow(50*time.Millisecond), runonce.WithLockTimeout(300*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer r.Close()
	stop := tickJobs(r, 1, 100*time.Millisecond)
	defer stop()
	fmt.Println("stall-child-ready")
	_, _ = os.Stdin.Read(make([]byte, 1)) // until the parent closes it
	return 0
}

// TestStallToldAsMeasured: an instance stopped (SIGSTOP) for 4 s, twice
// its session's timeout, says how long it stalled, as its monotonic clock
// measured it, and counts the outage that began with the stall from the
// stall's start: zklock's line when the session connects again, and
// runonce's when its session answers again. They said after=2.02s and
// down_for=2.313s ("ZooKeeper reachable again", the stall not seen),
// counted from when the process noticed, after the stop.
func TestStallToldAsMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-s stop and the outage's settling: about 12 s")
	}
	const stopFor = 4 * time.Second
	p, err := child.Start(child.Spec{Role: stallRole, Args: []string{"-test.run=^$"},
		Task: stallTask{Servers: zktest.Servers(t), Root: zktest.Path(t), Session: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = p.CloseStdin()
		_ = p.Wait()
	}()
	var seen []string
	childLine(t, p, &seen, "stall-child-ready", 30*time.Second)
	time.Sleep(time.Second)
	stopped := time.Now()
	if err := syscall.Kill(p.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(stopFor)
	if err := syscall.Kill(p.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stop := time.Since(stopped)
	zkLine := childLine(t, p, &seen, "connected to ZooKeeper again", 30*time.Second)
	roLine := childLine(t, p, &seen, "down_for=", 30*time.Second)
	// The child cannot have measured a stall longer than from the stop to
	// now, nor one shorter than the stop less its watch's period (it was
	// stopped at least from the kill to the continue).
	most := time.Since(stopped) + time.Second
	t.Logf("stopped %v; zklock: %s\nrunonce: %s", stop.Round(time.Millisecond), zkLine, roLine)
	checkStallLine(t, zkLine, "after", stop-300*time.Millisecond, most)
	checkStallLine(t, roLine, "down_for", stop-300*time.Millisecond, most)
}

// childLine returns the first line of p's stdout, seen kept, that
// contains what, failing the test after d.
func childLine(t *testing.T, p *child.Proc, seen *[]string, what string, d time.Duration) string {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-p.Lines():
			if !ok {
				t.Fatalf("waiting for %q: %s", what, p.Describe("the child"))
			}
			*seen = append(*seen, string(l))
			if strings.Contains(string(l), what) {
				return string(l)
			}
		case <-timeout:
			t.Fatalf("no %q; the child's lines:\n%s", what, strings.Join(*seen, "\n"))
		}
	}
}

// checkStallLine checks line's stalled_for, between least and most, and
// that its counted duration counts the stall.
func checkStallLine(t *testing.T, line, counted string, least, most time.Duration) {
	t.Helper()
	stalled, ok := durationAttr(line, "stalled_for")
	if !ok {
		t.Errorf("no stalled_for: %s", line)
		return
	}
	if stalled < least || stalled > most {
		t.Errorf("stalled_for=%v, want between %v and %v: %s", stalled, least, most, line)
	}
	if d, ok := durationAttr(line, counted); !ok || d < stalled {
		t.Errorf("%s=%v, below the stall (%v): not counted from its start: %s", counted, d, stalled, line)
	}
}

// durationAttr reads a slog text line's duration attribute.
func durationAttr(line, key string) (time.Duration, bool) {
	m := regexp.MustCompile(`(?:^| )` + key + `=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(m[1])
	return d, err == nil
}
