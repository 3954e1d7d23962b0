package tier_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// Environment of a worker child: the test binary re-executed.
const (
	childEnv      = "TIERLOCK_TIER_CHILD" // "servers|path|records file|goroutines|iterations"
	childReadyMsg = "ready"
)

// childMain is a worker process: G goroutines each acquire the lock N times
// and append enter/exit records, with the fencing token, to a shared file
// opened with O_APPEND. The kernel orders appends to one file, so the file
// is a global order of enters and exits across processes: the independent
// checker in TestMultiProcessExclusion reads it.
func childMain() int {
	parts := strings.Split(os.Getenv(childEnv), "|")
	if len(parts) != 5 {
		fmt.Fprintln(os.Stderr, "bad", childEnv)
		return 2
	}
	servers, path, file := strings.Split(parts[0], ","), parts[1], parts[2]
	g, _ := strconv.Atoi(parts[3])
	n, _ := strconv.Atoi(parts[4])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := zklock.Connect(ctx, servers, zklock.WithLogger(quietLog))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	l, err := tier.New(s, path, tier.WithLogger(quietLog))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer l.Close()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	fmt.Println(childReadyMsg)
	pid := os.Getpid()
	var wg sync.WaitGroup
	failed := make(chan error, g)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < n; j++ {
				held, err := l.Acquire(ctx)
				if err != nil {
					failed <- err
					return
				}
				tok, _ := l.Token(held)
				fmt.Fprintf(f, "E %d %d %d\n", pid, i, tok)
				fmt.Fprintf(f, "X %d %d %d\n", pid, i, tok)
				if err := l.Release(held); err != nil {
					failed <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(failed)
	for err := range failed {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Four processes of 16 goroutines each on one path: the records show no
// overlap and strictly increasing tokens, and ZooKeeper never holds more
// than one node and one watch per process.
func TestMultiProcessExclusion(t *testing.T) {
	const procs, goroutines, iterations = 4, 16, 8
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	file := t.TempDir() + "/records"
	env := fmt.Sprintf("%s=%s|%s|%s|%d|%d", childEnv, strings.Join(servers, ","), p, file, goroutines, iterations)

	var cmds []*exec.Cmd
	for i := 0; i < procs; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), env)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != childReadyMsg {
			t.Fatalf("worker %d: %q", i, line)
		}
		cmds = append(cmds, cmd)
	}

	// Sample the queue and the watches while the workers run.
	obs := connect(t, servers)
	done := make(chan error, procs)
	for _, c := range cmds {
		go func() { done <- c.Wait() }()
	}
	peakNodes, peakWatches, samples := 0, 0, 0
	for finished := 0; finished < procs; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("worker failed: %v", err)
			}
			finished++
			continue
		case <-time.After(20 * time.Millisecond):
		}
		samples++
		perOwner := map[int64]int{}
		for _, c := range children(t, obs.Conn(), p) {
			if ok, st, err := obs.Conn().Exists(p + "/" + c); err == nil && ok {
				perOwner[st.EphemeralOwner]++
			}
		}
		for _, n := range perOwner {
			peakNodes = max(peakNodes, n)
		}
		for _, n := range watchesBySession(t, p+"/") {
			peakWatches = max(peakWatches, n)
		}
	}
	t.Logf("%d samples: peak znodes per process %d, peak watches per process %d", samples, peakNodes, peakWatches)
	if peakNodes > 1 || peakWatches > 1 {
		t.Errorf("peak per process: %d znodes, %d watches; want at most 1 each", peakNodes, peakWatches)
	}
	checkRecords(t, file, procs*goroutines*iterations)
}

// checkRecords is the independent checker: at most one holder between an
// enter and its exit, and every hold's token above the previous one's.
func checkRecords(t *testing.T, file string, want int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var inside string
	var lastTok int64
	holds := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 {
			t.Fatalf("bad record %q", sc.Text())
		}
		who := fields[1] + "/" + fields[2]
		tok, _ := strconv.ParseInt(fields[3], 10, 64)
		switch fields[0] {
		case "E":
			if inside != "" {
				t.Fatalf("overlap: %s entered while %s held the lock", who, inside)
			}
			if tok <= lastTok {
				t.Fatalf("token %d of %s not above %d", tok, who, lastTok)
			}
			inside, lastTok = who, tok
			holds++
		case "X":
			if inside != who {
				t.Fatalf("%s exited while %q held the lock", who, inside)
			}
			inside = ""
		}
	}
	if holds != want {
		t.Fatalf("%d holds recorded, want %d", holds, want)
	}
}
