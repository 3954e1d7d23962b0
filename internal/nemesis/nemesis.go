// Package nemesis sets up, for tests, the faults under which a holder must
// be told of a possible loss before any other process is granted its lock
// (DESIGN.md's invariant), and judges the order of the moments that matter.
//
// A scene has three parties: A holds the lock, through a fault proxy (or,
// for Partition, on the follower that the fault cuts from its peers); B
// waits for the lock on the other servers; an observer on B's side watches
// A's node. The fault strikes A; then, on this test process's monotonic
// clock, A must be told (its loss signal closes) before its node is gone
// and before B's grant, and B must be granted within [Bound].
//
// The tests of tier, zkcompat and zklock share it, so that the same scene
// is judged alike whatever lock the parties use.
package nemesis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
)

const (
	// Timeout is A's session timeout. At tickTime 200 ms the server grants
	// it, and syncLimit 10 × 200 ms = 2 s against it is the unsafe ratio
	// DESIGN.md measured.
	Timeout = 2 * time.Second
	// Bound is how long after a fault B may take to be granted the lock,
	// and A to be told: the session timeout plus a margin for a slow
	// machine.
	Bound = Timeout + 5*time.Second
)

// Fault names what strikes A.
type Fault string

// The faults.
const (
	// Partition cuts the follower A is connected to from its peers while
	// A's connection to it stays up: the follower answers A's pings until
	// syncLimit × tickTime while the leader expires A's session.
	Partition Fault = "partition"
	// Asymmetric loses A's bytes to the server while the server's reach A.
	Asymmetric Fault = "asymmetric"
	// Stall blocks A's writes (its send buffer fills) while the server's
	// bytes still reach A; a third of the timeout in, A's session writes
	// more than the socket buffers hold, so its send loop blocks in write.
	Stall Fault = "stall"
	// Drop closes A's connection: the simple case, kept as the baseline.
	Drop Fault = "drop"
)

// Env is where one scene runs: the servers, A's way to them, and the
// fault.
type Env struct {
	Fault  Fault
	A      []string // where A connects
	Others []string // where B and the observer connect
	All    []string // every server, for the orphan check
	Proxy  *faultproxy.Proxy

	cluster  *zkserver.Cluster // Partition's ensemble
	follower int               // Partition's victim
	writers  sync.WaitGroup    // Stall's blocked writes
	stallAt  *time.Timer
}

// New prepares the servers for fault f: the shared server of the test
// package (zktest) behind a fault proxy for A, or for Partition a private
// three-server ensemble whose peer links pass through proxies, with A on a
// follower.
func New(t *testing.T, f Fault) *Env {
	t.Helper()
	e := &Env{Fault: f}
	if f != Partition {
		servers := zktest.Servers(t)
		e.Proxy = NewProxy(t, servers[0])
		e.A, e.Others, e.All = []string{e.Proxy.Addr()}, servers, servers
		return e
	}
	e.cluster, e.follower, e.Others = FollowerEnsemble(t)
	t.Cleanup(func() { e.reportOnFailure(t) })
	// A reaches the follower, and only it, through a proxy that only
	// counts: it shows when A pings.
	e.Proxy = NewProxy(t, e.cluster.Addr(e.follower))
	e.A, e.All = []string{e.Proxy.Addr()}, e.cluster.Addrs()
	return e
}

// FollowerEnsemble starts three servers whose peer links pass through
// proxies (tickTime 200 ms, syncLimit 10: the unsafe ratio against
// Timeout) and returns them with the index of a follower, f, and the
// addresses of the other two.
func FollowerEnsemble(t *testing.T) (zc *zkserver.Cluster, f int, rest []string) {
	t.Helper()
	zc = zktest.Ensemble(t, 3, zkserver.WithPeerProxies(), zkserver.WithTickTime(200*time.Millisecond),
		zkserver.WithSyncLimit(10))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A leader is taken as it is only once both followers synced with it:
	// a member that says "leader" while the others are still joining can
	// lose them (initLimit) on a loaded machine, and the next election may
	// make the chosen victim the leader, a different scene (an election
	// before the session can expire) than the one judged here.
	var leader int
	zktest.Eventually(t, 30*time.Second, "a leader with both followers synced", func() bool {
		leader = syncedLeader(ctx, zc)
		return leader >= 0
	})
	f = (leader + 1) % 3
	for i := range zc.Size() {
		if i != f {
			rest = append(rest, zc.Addr(i))
		}
	}
	return zc, f, rest
}

// reportOnFailure logs, if t failed, what each member of Partition's
// ensemble says it is and the end of its log: a scene whose session was
// not expired in time is the servers' doing or the test's, and the log
// says which (a leader that moved, a quorum lost to a slow machine).
func (e *Env) reportOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range e.cluster.Size() {
		mode, err := e.cluster.Mode(ctx, i)
		t.Logf("member %d (victim %d): mode %q %v; log ends:\n%s", i, e.follower, mode, err, e.cluster.LogTail(i, 25))
	}
}

// NewProxy is a fault proxy in front of target, closed when the test ends.
func NewProxy(t testing.TB, target string) *faultproxy.Proxy {
	t.Helper()
	px, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	return px
}

// Prepare readies A's connection a for the fault, before A takes the
// lock: under Asymmetric and Stall the server writes to A now and then, as
// other traffic on a busy session would, so that A's client keeps hearing
// from the server. writer is a connection on the other servers.
func (e *Env) Prepare(t *testing.T, a, writer *zk.Conn) {
	t.Helper()
	if e.Fault == Asymmetric || e.Fault == Stall {
		Chatter(t, a, writer, 40, Timeout/10)
	}
}

// Strike waits until shortly before A's next ping (the worst moment for A,
// and the same in every run), injects the fault and returns when it
// struck. Under Stall, a third of the timeout later, five large writes on
// a fill its socket.
func (e *Env) Strike(t *testing.T, a *zk.Conn) time.Time {
	t.Helper()
	if e.Fault == Partition {
		e.checkVictimFollows(t)
	}
	BeforeNextPing(t, e.Proxy, Timeout)
	switch e.Fault {
	case Partition:
		if err := e.cluster.PartitionMember(e.follower); err != nil {
			t.Fatal(err)
		}
	case Asymmetric:
		e.Proxy.BlockUpstream()
	case Stall:
		e.Proxy.Stall()
		big := bytes.Repeat([]byte("w"), 1200<<10)
		e.stallAt = time.AfterFunc(Timeout/3, func() {
			for i := range 5 {
				e.writers.Add(1)
				go func() {
					defer e.writers.Done()
					_, _ = a.Set(fmt.Sprintf("/nemesis-big%d", i), big, -1)
				}()
			}
		})
	case Drop:
		e.Proxy.DropAll()
	default:
		t.Fatalf("nemesis: unknown fault %q", e.Fault)
	}
	return time.Now()
}

// checkVictimFollows waits until Partition's victim follows a leader that
// has both its followers in sync, as when FollowerEnsemble chose it: the
// partition must leave a quorum that expires A's session on its own clock.
// A follower that fell behind on a loaded machine is waited for; a leader
// that moved onto the victim fails t, as cutting it would judge an
// election, not a follower's partition.
func (e *Env) checkVictimFollows(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zktest.Eventually(t, 20*time.Second, fmt.Sprintf("member %d (A's server) following a leader with both followers synced", e.follower),
		func() bool {
			leader := syncedLeader(ctx, e.cluster)
			return leader >= 0 && leader != e.follower
		})
}

// syncedLeader is the index of zc's leader if both its followers are in
// sync with it, else -1.
func syncedLeader(ctx context.Context, zc *zkserver.Cluster) int {
	leader, err := zc.Leader(ctx)
	if err != nil {
		return -1
	}
	if m, err := zc.Mntr(ctx, leader); err != nil || m["zk_synced_followers"] != "2" {
		return -1
	}
	return leader
}

// Heal ends the fault.
func (e *Env) Heal(t *testing.T) {
	t.Helper()
	if e.stallAt != nil {
		e.stallAt.Stop()
	}
	if e.Fault == Partition {
		if err := e.cluster.HealMember(e.follower); err != nil {
			t.Fatal(err)
		}
		return
	}
	e.Proxy.Heal()
}

// Done waits for Stall's blocked writes, which fail once A's session or
// connection is closed.
func (e *Env) Done() { e.writers.Wait() }

// BeforeNextPing waits until A's client sends something through px (A is
// idle, so that is a ping), then until shortly before its next ping is due:
// go-zookeeper pings every third of the session timeout on a fixed ticker.
func BeforeNextPing(t testing.TB, px *faultproxy.Proxy, timeout time.Duration) {
	t.Helper()
	start := px.Stats().Upstream
	zktest.Eventually(t, timeout, "a ping from A", func() bool { return px.Stats().Upstream != start })
	time.Sleep(timeout/3 - 80*time.Millisecond)
}

// Chatter makes the server write to a now and then without a asking
// anything after the start: a sets n data watches and writer changes one
// watched node every period. It keeps a's read deadline fresh while its
// own bytes go nowhere. It stops when the test ends.
func Chatter(t testing.TB, a, writer *zk.Conn, n int, every time.Duration) {
	t.Helper()
	base := zktest.Path(t) + "-chatter"
	Mkdirs(t, writer, base)
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("%s/n%d", base, i)
		if _, err := writer.Create(nodes[i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Sync(nodes[i]); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := a.GetW(nodes[i]); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for _, node := range nodes {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
			_, _ = writer.Set(node, []byte("x"), -1)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		for _, node := range nodes {
			_ = writer.Delete(node, -1)
		}
		_ = writer.Delete(base, -1)
	})
}

// Mkdirs creates path and its parents as persistent nodes.
func Mkdirs(t testing.TB, conn *zk.Conn, path string) {
	t.Helper()
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
}
