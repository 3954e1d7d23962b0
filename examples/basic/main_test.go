package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The program runs against one real ZooKeeper shared by the package's
// tests; goleak checks that it leaves no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	args := []string{
		"-zk", strings.Join(zktest.Servers(t), ","),
		"-path", fmt.Sprintf("/tierlock-examples-test/basic-%d", os.Getpid()),
	}
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	for _, want := range []string{
		"hold count 1,",
		"re-entered, hold count 2",
		"Release of the inner hold: hold count 1, still held",
		"TryAcquire from another goroutine: false",
		"TryAcquire from another session (another process): false",
		"3 steps done, held.Done() never fired",
		"the held context is done: tier: lock released",
		"held.Done() fired: zklock: lock lost: zklock: lock node deleted",
		"errors.Is(err, tier.ErrLockLost) = true",
		"done",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestRunBadFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-no-such-flag"}, &out); err == nil {
		t.Fatal("run accepted an unknown flag")
	}
}

func TestRunNoServerGiven(t *testing.T) {
	t.Setenv("TIERLOCK_ZK_SERVERS", "")
	var out bytes.Buffer
	err := run(context.Background(), nil, &out)
	if err == nil || !strings.Contains(err.Error(), "-zk") || !strings.Contains(err.Error(), "TIERLOCK_ZK_SERVERS") {
		t.Errorf("run without servers: %v; want an error naming -zk and TIERLOCK_ZK_SERVERS", err)
	}
}
