package main

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// Waiters are counted as what ZooKeeper has, nodes, one per waiting
// process, under a heading that says so, and the table says that the
// goroutines a process queues in itself are not in ZooKeeper: the
// "WAITING 39" read as goroutines while about 580 waited (issue 31).
func TestLsWaitingIsProcesses(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	s1, s2, s3 := connect(t), connect(t), connect(t)
	p := root + "/job-1"
	acquire(t, ctx, newLock(t, s1, p))
	acquireAsync(ctx, newLock(t, s2, p))
	acquireAsync(ctx, newLock(t, s3, p))
	waitQueue(t, s1, p, 3)

	for _, args := range [][]string{{"ls", root}, {"watch", "-count", "1", root}} {
		r := tierlock(t, args...)
		r.want(t, exitOK, "1 lock, 1 held, 2 processes waiting")
		if c := cells(t, r.stdout, "job-1"); c["WAITING-PROCS"] != "2" {
			t.Errorf("%s: %q, want WAITING-PROCS 2:\n%s", args[0], c, r.stdout)
		}
		if !strings.Contains(r.stdout, "goroutines") || !strings.Contains(r.stdout, "not in ZooKeeper") {
			t.Errorf("%s: no word that goroutines waiting are not in ZooKeeper:\n%s", args[0], r.stdout)
		}
	}
}

// Tables of a root stay within 120 columns: a long holder is cut short
// (ls -l and -json keep all of it).
func TestLsTableWidth(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	label := strings.Repeat("long-label-", 15)
	acquire(t, ctx, newLock(t, connect(t), root+"/nightly/job-000", zklock.WithLabel(label)))
	for _, args := range [][]string{{"ls", root}, {"watch", "-count", "1", root}} {
		r := tierlock(t, args...)
		r.want(t, exitOK)
		for _, line := range strings.Split(r.stdout, "\n") {
			if n := utf8.RuneCountInString(line); n > 120 {
				t.Errorf("%s: a line of %d columns:\n%s", args[0], n, line)
			}
		}
		if c := cells(t, r.stdout, "nightly/job-000"); !strings.HasSuffix(c["HOLDER"], "…") {
			t.Errorf("%s: holder %q not cut short", args[0], c["HOLDER"])
		}
	}
	tierlock(t, "ls", "-l", root).want(t, exitOK, label)
}

// A process waiting on two locks is one process waiting, not two: the
// total counts sessions, not nodes (two processes, each queued on two
// locks, were "4 processes waiting").
func TestLsTotalCountsProcesses(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	s1, s2, s3 := connect(t), connect(t), connect(t)
	for _, p := range []string{root + "/job-1", root + "/job-2"} {
		acquire(t, ctx, newLock(t, s1, p))
		acquireAsync(ctx, newLock(t, s2, p))
		acquireAsync(ctx, newLock(t, s3, p))
		waitQueue(t, s1, p, 3)
	}
	r := tierlock(t, "ls", root)
	r.want(t, exitOK, "2 locks, 2 held, 2 processes waiting")
	for _, lock := range []string{"job-1", "job-2"} {
		if c := cells(t, r.stdout, lock); c["WAITING-PROCS"] != "2" {
			t.Errorf("%s: %q, want WAITING-PROCS 2:\n%s", lock, c, r.stdout)
		}
	}
}
