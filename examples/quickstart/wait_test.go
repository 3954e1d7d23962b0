package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
)

// A job waits for its key longer than the session timeout: a process
// killed while it holds the job keeps its node until its session expires,
// about one timeout after it last spoke, and the job must then pass on
// rather than the wait end just before.
func TestJobWaitOutlastsSessionTimeout(t *testing.T) {
	if keyWait <= sessionTimeout {
		t.Errorf("a job waits %v for its lock, not longer than the session timeout %v", keyWait, sessionTimeout)
	}
	// The server notices an expiry on its tick (at most 2 s by default)
	// and the watch that wakes the waiter takes a round trip: leave room.
	if keyWait < sessionTimeout+3*time.Second {
		t.Errorf("a job waits %v, too close to the session timeout %v", keyWait, sessionTimeout)
	}
}

// A peer killed (SIGKILL) while it holds a job, late in this program's
// wait for it, loses the job when its session expires, and the program
// then runs it: the wait does not end first.
func TestKilledPeersJobPassesOn(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a session timeout")
	}
	servers := zktest.Servers(t)
	peer := startChild(t, peerChild, strings.Join(servers, ","))
	peer.waitLine(t, "held", 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*sessionTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, servers) }() // nil: it ran every job
	queued(t, zktest.Connect(t, servers), "invoices", 2)
	// Killed 5 s into the wait, the peer's session expires at least 2/3
	// of a session timeout later (its last ping came at most a third of
	// one before the kill): after the end of a wait of one timeout.
	time.Sleep(5 * time.Second)
	if err := peer.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := <-done; err != nil {
		t.Fatalf("%.1fs after the peer holding it was killed: %v", time.Since(killed).Seconds(), err)
	}
	if code := peer.exitCode(t, 5*time.Second); code != -1 || !peer.killed() {
		t.Errorf("the peer exited %d, not killed", code)
	}
}
