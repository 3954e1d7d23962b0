//go:build tierlocktrace && tierlockmutants

package replay

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/mutant"
	"github.com/tierlock/tierlock/internal/trace"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The scenario the seeded bugs of the lease's bounds and of the steps'
// timing run in (TestCodeMutants): one session through a fault proxy, with
// a session timeout T of 2 s, taking every step those bugs change. A
// stress run takes them too, but not every run, nor in seconds: a chain
// whose touch is far older than its proofs needs a session left idle,
// which a busy run seldom is, and a loss by a lapse a fault that freezes a
// holder's connection.

// scenarioEnv names the run: the test below runs only when the parent,
// runScenario, sets it.
const scenarioEnv = "TIERLOCK_REPLAY_SCENARIO"

// scenarioTimeout is the session timeout the scenario asks for, and the
// shared server grants (2 to 20 ticks of 200 ms).
const scenarioTimeout = 2 * time.Second

// TestScenarioForMutants is the scenario, run in a process of its own
// (runScenario) so that the bug it runs with is the one TIERLOCK_MUTANT
// named at its start, and recorded from that start (TIERLOCK_TRACE).
func TestScenarioForMutants(t *testing.T) {
	if os.Getenv(scenarioEnv) == "" {
		t.Skip("run by TestCodeMutants in a process of its own")
	}
	px, err := faultproxy.New(zktest.Servers(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	s := zktest.Connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(scenarioTimeout))
	l := zktest.NewLock(t, s, zktest.Path(t))
	ctx := zktest.Context(t, 30*time.Second)
	acquire := func() *zklock.Hold {
		t.Helper()
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// Acquisitions after an idle stretch: with no node the session writes
	// only go-zookeeper's pings, every T/3, so the chains that renew the
	// lease when an acquisition wakes the session count from a ping's
	// touch, older than its proofs by up to a ping interval and π (T/2 ×
	// 5/8, the tick untold), the stretch a chain's bugs get wrong
	// (lease.go).
	for range 8 {
		time.Sleep(scenarioTimeout * 3 / 20)
		if err := acquire().Release(); err != nil {
			t.Fatal(err)
		}
	}
	// Acquisitions after a longer stretch, T/2. A renewal counted
	// from its proof's own write (the rule before issue 55, the bug
	// lease-from-proof) then claims a touch R - T/4 = 5T/8 before that
	// write: later than any chain can show, which is π = 5T/16 before the
	// previous acquisition's last proof at the latest. The stretch above,
	// 3T/20, leaves that claim within what a chain shows about half the
	// time.
	// The session proves itself while idle (its idle syncs), so the
	// stretch is a frozen one: nothing answered for T/2 (under go-
	// zookeeper's 2T/3 silence), then an acquisition at once, whose chain
	// can show no touch later than the freeze's start.
	for range 3 {
		time.Sleep(scenarioTimeout / 8)
		px.Pause()
		time.Sleep(scenarioTimeout / 2)
		px.Resume()
		if err := acquire().Release(); err != nil {
			t.Fatal(err)
		}
	}
	// A hold through a frozen connection: no proof gets through, and the
	// lease's lapse ends the hold at its deadline, R = 7T/8 after the
	// latest touch a chain showed, and tells it lost.
	h := acquire()
	px.Pause()
	lost(t, h, scenarioTimeout)
	px.Resume()
	// A hold through a dropped connection: the disconnection ends it.
	zktest.Eventually(t, 10*time.Second, "connected again", func() bool { return s.State() == zklock.StateConnected })
	h = acquire()
	px.DropAll()
	lost(t, h, scenarioTimeout)
	zktest.Eventually(t, 10*time.Second, "connected again", func() bool { return s.State() == zklock.StateConnected })
	if err := acquire().Release(); err != nil {
		t.Fatal(err)
	}
}

// lost waits up to d for h to be lost, then releases it.
func lost(t *testing.T, h *zklock.Hold, d time.Duration) {
	t.Helper()
	select {
	case <-h.Lost():
	case <-time.After(d):
		t.Fatalf("hold not lost within %v", d)
	}
	if err := h.Release(); !errors.Is(err, zklock.ErrLockLost) {
		t.Errorf("Release of a lost hold: %v, want ErrLockLost", err)
	}
}

// runScenario runs the scenario in a process of its own with the bug name
// ("" for none), recording into dir, against the shared server, and
// returns its output.
func runScenario(t *testing.T, name, dir string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestScenarioForMutants$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), scenarioEnv+"=1", mutant.Env+"="+name, trace.EnvDir+"="+dir,
		zkserver.EnvServers+"="+strings.Join(zktest.Servers(t), ","))
	out, err := cmd.CombinedOutput()
	if err != nil && name == "" {
		t.Fatalf("the scenario failed with no bug: %v\n%s", err, out)
	}
	return out
}
