package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The test binary is also the worker: run re-executes os.Executable(),
// which under go test is this binary, with workerEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if err := runWorker(context.Background(), os.Args[1:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(zktest.Wrap(m))
}

// runScheduler runs the program briefly against the shared server and
// returns its output.
func runScheduler(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = append([]string{
		"-zk", strings.Join(zktest.Servers(t), ","),
		"-root", fmt.Sprintf("/tierlock-examples-test/%s-%d", t.Name(), os.Getpid()),
		"-duration", "1500ms",
	}, args...)
	var out bytes.Buffer
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("run %v: %v\noutput:\n%s", args, err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	return out.String()
}

// number returns the integer that follows prefix in out.
func number(t *testing.T, out, prefix string) int {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(prefix) + `(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output lacks %q<number>", prefix)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestTryPolicy(t *testing.T) {
	out := runScheduler(t, "-procs", "2", "-workers", "8", "-jobs", "20", "-work", "5ms")
	if !strings.Contains(out, " 0 overlaps, 0 fencing-token regressions, 0 unfinished, 0 malformed") {
		t.Error("the checker found a problem")
	}
	if runs := number(t, out, "records: "); runs == 0 {
		t.Error("no job ran")
	}
	if !strings.Contains(out, "no job ever ran twice at once (0 overlaps)") {
		t.Error("no summary")
	}
	if n := strings.Count(out, "  pid "); n != 2 {
		t.Errorf("%d worker processes reported, want 2", n)
	}
}

func TestWaitPolicyFewJobs(t *testing.T) {
	// 2 processes × 16 goroutines on 4 jobs: goroutines of a process share
	// jobs, so the process's gate keeps them to one node per job, where
	// locks per goroutine would need one node per goroutine (32).
	out := runScheduler(t, "-procs", "2", "-workers", "16", "-jobs", "4", "-work", "2ms", "-policy", "wait")
	if !strings.Contains(out, " 0 overlaps, 0 fencing-token regressions, 0 unfinished, 0 malformed") {
		t.Error("the checker found a problem")
	}
	if runs := number(t, out, "records: "); runs == 0 {
		t.Error("no job ran")
	}
	peak := number(t, out, "total: peak ")
	if peak == 0 || peak >= 32 {
		t.Errorf("peak %d lock znodes: want some, and fewer than the 32 of locks per goroutine", peak)
	}
}

func TestCheckRuns(t *testing.T) {
	good := `start job-1 10 100
start job-2 11 101
end job-1 10 100
start job-1 11 102
end job-2 11 101
end job-1 11 102
`
	res, err := checkRuns(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if want := (checkResult{runs: 3, jobs: 2}); res != want {
		t.Errorf("good records: %+v, want %+v", res, want)
	}

	bad := `start job-1 10 100
start job-1 11 99
end job-1 10 100
end job-1 11 99
start job-2 10 200
end job-3 10 1
garbage
`
	res, err = checkRuns(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if want := (checkResult{runs: 3, jobs: 2, overlaps: 1, regressions: 1, unfinished: 1, malformed: 2}); res != want {
		t.Errorf("bad records: %+v, want %+v", res, want)
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-policy", "sometimes"}, {"-procs", "0"}, {"-duration", "0s"}, {"-nope"}} {
		if _, err := parseFlags("test", args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
