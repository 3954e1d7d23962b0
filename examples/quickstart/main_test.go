package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// TestMain: the test binary is also the children of the tests (see
// child_test.go), chosen by an environment variable.
func TestMain(m *testing.M) {
	if servers := os.Getenv(quietChild); servers != "" {
		os.Exit(quietRun(strings.Split(servers, ",")))
	}
	if servers := os.Getenv(peerChild); servers != "" {
		os.Exit(peerRun(strings.Split(servers, ",")))
	}
	if args, ok := os.LookupEnv(mainChild); ok {
		childMain(args)
		os.Exit(0)
	}
	goleak.VerifyTestMain(zktest.Wrap(m))
}

// quietChild names the environment variable that makes the test binary
// the child of TestQuietByDefault.
const quietChild = "TIERLOCK_QUICKSTART_QUIET_CHILD"

// quietRun acquires and releases a lock 100 times with default options.
func quietRun(servers []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zklock.Connect(ctx, servers)
	if err != nil {
		return 2
	}
	defer s.Close()
	l, err := tier.New(s, "/quickstart/quiet")
	if err != nil {
		return 2
	}
	defer l.Close()
	for range 100 {
		held, err := l.Acquire(ctx)
		if err != nil {
			return 2
		}
		if err := l.Release(held); err != nil {
			return 2
		}
	}
	return 0
}

// A process that acquires and releases 100 times with default options
// writes nothing to stderr: the library logs only warnings unless given a
// logger, and a healthy run has none.
func TestQuietByDefault(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), quietChild+"="+strings.Join(zktest.Servers(t), ","))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v; stderr:\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("100 acquisitions with default options wrote to stderr:\n%s", stderr.String())
	}
}

// The program runs every goroutine's jobs against a real server.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := captureStdout(t, func() {
		if err := run(ctx, zktest.Servers(t)); err != nil {
			t.Fatal(err)
		}
	})
	for _, key := range keys {
		if n := strings.Count(out, key+": done"); n != goroutines*rounds/len(keys) {
			t.Errorf("%s's job ran %d times, want %d:\n%s", key, n, goroutines*rounds/len(keys), out)
		}
	}
}

func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, r)
		done <- b.String()
	}()
	defer func() { os.Stdout = old }()
	fn()
	w.Close()
	os.Stdout = old
	return <-done
}
