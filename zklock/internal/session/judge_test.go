package session

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mono"
)

// A hold is judged by the lease at the moment it is asked of, whether or
// not the lease's timer has run: a process resumed from a stop runs its
// timers in no set order, and its lease's may come last. mono.Jump stands
// for the stop (the clock the lease is judged by moves 15 s on; the
// bubble's timers do not). Vouch ends every hold of the session then, each
// told once with ErrLeaseExpired, the lapse told once with the holds it
// ended and the stall; Leave of an ended hold says why; the timer, when it
// runs, tells nothing again; and the stall's outage, begun as the process
// finds its connection gone, counts the holds the lapse ended. Before,
// Vouch did not exist, and the release (Leave) of such a hold returned nil.
func TestVouchJudgesTheLeaseAsAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		var logMu sync.Mutex
		s, c := polledFloor()
		s.log = slog.New(slog.NewJSONHandler(lockedBuffer{&logMu, &buf}, nil))
		s.out.log = s.log
		defer s.Close()
		unwatch := mono.Watch() // the stall watch, as Dial starts it
		defer unwatch()
		synctest.Wait()
		s.st.mu.Lock()
		_, _ = s.lease.renewLocked(0x101, time.Now())
		s.st.mu.Unlock()
		told := make([][]error, 2)
		ms := make([]*Member, 2)
		for i := range ms {
			ms[i] = NewMember("/l", "n", func(cause error) { told[i] = append(told[i], cause) })
			s.Waiting(1)
			if err := s.Grant(context.Background(), 0x101, ms[i]); err != nil {
				t.Fatal(err)
			}
			s.Waiting(-1)
		}
		if err := ms[0].Vouch(); err != nil {
			t.Fatalf("Vouch before the stop: %v", err)
		}
		back := mono.Jump(15 * time.Second)
		defer back()
		if err := ms[0].Vouch(); !errors.Is(err, ErrLeaseExpired) {
			t.Fatalf("Vouch after a stop past the deadline: %v; want ErrLeaseExpired", err)
		}
		for i := range told {
			if len(told[i]) != 1 || !errors.Is(told[i][0], ErrLeaseExpired) {
				t.Errorf("hold %d told %v; want ErrLeaseExpired once, before Vouch returned", i, told[i])
			}
		}
		if err := ms[1].Leave(); !errors.Is(err, ErrLeaseExpired) {
			t.Errorf("Leave of a hold the lapse ended: %v; want ErrLeaseExpired", err)
		}
		c.state.Store(int32(zk.StateDisconnected)) // the connection found gone
		time.Sleep(2 * pollIdle)
		synctest.Wait()
		logMu.Lock()
		lines := buf.String()
		logMu.Unlock()
		var lapse, outage string
		lapses := 0
		for _, l := range strings.Split(lines, "\n") {
			switch {
			case strings.Contains(l, `"msg":"session not confirmed with the leader in time`):
				lapse, lapses = l, lapses+1
			case strings.Contains(l, `"msg":"no connection to ZooKeeper`):
				outage += l
			}
		}
		if lapses != 1 || !strings.Contains(lapse, `"holds_ended":2`) || !strings.Contains(lapse, `"stalled_for":1`) {
			t.Errorf("the lapse's line: %q; want one, with holds_ended 2 and the stall", lapse)
		}
		if !strings.Contains(outage, `"holds_ended":2`) || !strings.Contains(outage, `"stalled_for":1`) {
			t.Errorf("the stall's outage line: %q; want holds_ended 2 and the stall\n%s", outage, lines)
		}
		time.Sleep(4 * time.Second) // the lease's timer, late, finds nothing to end
		synctest.Wait()
		for i := range told {
			if len(told[i]) != 1 {
				t.Errorf("hold %d told %d times", i, len(told[i]))
			}
		}
	})
}

// lockedBuffer writes to b under mu.
type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (lb lockedBuffer) Write(p []byte) (int, error) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.b.Write(p)
}
