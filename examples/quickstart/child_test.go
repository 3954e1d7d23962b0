package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// The environment variables that turn the test binary into a child of a
// test (see TestMain): the program itself, with the variable's value as
// its arguments; or a peer that holds the invoices job until it is killed,
// on the servers the value lists.
const (
	mainChild = "TIERLOCK_QUICKSTART_MAIN_CHILD"
	peerChild = "TIERLOCK_QUICKSTART_PEER_CHILD"
)

// childMain runs the program as its own process would: main with args.
// It returns when main does; main exits by itself on an error.
func childMain(args string) {
	os.Args = append([]string{"quickstart"}, strings.Fields(args)...)
	main()
}

// peerRun is another copy of the program, with the same session timeout,
// stopped while it holds the invoices job: it says "held" and waits to be
// killed.
func peerRun(servers []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zklock.Connect(ctx, servers, zklock.WithSessionTimeout(sessionTimeout))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	jobs, err := tier.NewRegistry(s, jobsRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, err := jobs.Acquire(ctx, "invoices"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("held")
	time.Sleep(time.Minute) // until killed
	return 3
}

// jobsRoot is the program's root of its jobs' locks.
const jobsRoot = "/quickstart/jobs"

// child is the test binary started again as a child process.
type child struct {
	cmd    *exec.Cmd
	lines  chan string // its stdout, line by line; closed when it exits
	stderr bytes.Buffer
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's, once exited is closed
}

// startChild starts the test binary with env=value, and kills and reaps
// it when the test ends if it still runs.
func startChild(t *testing.T, env, value string) *child {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{lines: make(chan string, 100), exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), env+"="+value)
	c.cmd.Stdout, c.cmd.Stderr = w, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		r.Close()
		close(c.lines)
	}()
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
		for range c.lines {
		}
	})
	return c
}

// waitLine reads the child's stdout until a line that contains want, and
// fails the test if none comes within d.
func (c *child) waitLine(t *testing.T, want string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				<-c.exited
				t.Fatalf("the child exited (%v) before writing %q; stderr:\n%s", c.err, want, c.stderr.String())
			}
			if strings.Contains(line, want) {
				return
			}
		case <-timeout:
			t.Fatalf("the child did not write %q within %v", want, d)
		}
	}
}

// exitCode waits up to d for the child to exit and returns its exit
// status; -1 for a child killed by a signal.
func (c *child) exitCode(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-c.exited:
	case <-time.After(d):
		t.Fatalf("the child did not exit within %v", d)
	}
	var ee *exec.ExitError
	switch {
	case c.err == nil:
		return 0
	case errors.As(c.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("child: %v", c.err)
	return 0
}

// signal sends sig to the child.
func (c *child) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// queued waits until n processes have a node in the queue of job's lock.
func queued(t *testing.T, s *zklock.Session, job string, n int) {
	t.Helper()
	zktest.Eventually(t, 30*time.Second, fmt.Sprintf("%d nodes queued for %s", n, job), func() bool {
		return len(zktest.Children(t, s.Conn(), jobsRoot+"/"+job)) >= n
	})
}

// killed reports whether the child was killed by SIGKILL.
func (c *child) killed() bool {
	var ee *exec.ExitError
	if !errors.As(c.err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signal() == syscall.SIGKILL
}
