package faultproxy

import (
	"io"
	"testing"
	"time"
)

// DropAfter cuts the link before the server's answer to its last bytes can
// pass, and counts the cut by then: with the proxy's goroutine held right
// after writing them (a loaded machine's preemption), the echo of those
// bytes never reaches the client, and Stats says Dropped as soon as the
// write is done. Before, the drop came after the write: the answer passed
// while the goroutine was held, and a client that had it read Dropped 0
// (zklock.TestRevokeUnknownOutcome, loaded make test run 132).
func TestDropAfterLetsNoAnswerThrough(t *testing.T) {
	s := startEcho(t)
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	roundTrip(t, c, "ping", "ping")
	counted := make(chan int64, 1)
	hook := func() {
		counted <- p.Stats().Dropped
		time.Sleep(200 * time.Millisecond) // the echo comes meanwhile
	}
	testHookTriggered.Store(&hook)
	defer testHookTriggered.Store(nil)
	p.DropAfter(4)
	if _, err := c.Write([]byte("last")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if n > 0 {
		t.Errorf("the client read %q after the bytes that dropped its link", buf[:n])
	}
	if err != io.EOF {
		t.Logf("read after the drop: %v", err)
	}
	if d := <-counted; d != 1 {
		t.Errorf("Dropped %d as the triggering bytes were written, want 1", d)
	}
}
