package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
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
	outs := make([]bytes.Buffer, len(policies))
	errs := make([]error, len(policies))
	var wg sync.WaitGroup
	for i, p := range policies {
		wg.Go(func() { errs[i] = run(ctx, slices.Concat(common, p), &outs[i], st) })
	}
	wg.Wait()
	for i, p := range policies {
		t.Run(strings.Join(p, " "), func(t *testing.T) {
			out := outs[i].String()
			t.Logf("output:\n%s", out)
			if errs[i] != nil {
				t.Fatalf("run: %v", errs[i])
			}
			if !strings.Contains(out, "ran it, fencing token ") {
				t.Error("no job ran")
			}
			if strings.Contains(out, "refused") || strings.Contains(out, "failed") {
				t.Error("a write was refused or a run failed")
			}
		})
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

func TestNoServerGiven(t *testing.T) {
	t.Setenv("TIERLOCK_ZK_SERVERS", "")
	err := run(context.Background(), nil, &bytes.Buffer{}, newStore())
	if err == nil || !strings.Contains(err.Error(), "-zk") || !strings.Contains(err.Error(), "TIERLOCK_ZK_SERVERS") {
		t.Errorf("run without servers: %v; want an error naming -zk and TIERLOCK_ZK_SERVERS", err)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"-zk", "x:1", "-jobs", "0"}, {"-zk", "x:1", "-wait", "-1s"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, newStore()); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
