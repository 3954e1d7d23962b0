package zkserver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zkserver"
)

// A follower cut from its peers through the peer proxies keeps serving its
// clients for about syncLimit ticks, then stops; the leader and the other
// follower keep their quorum and take writes; once healed the follower
// rejoins and catches up.
func TestPartitionMember(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts an ensemble and cuts a member, about 3 s")
	}
	if _, ok := zkserver.FromEnv(); ok {
		t.Skip("TIERLOCK_ZK_SERVERS is set: not starting servers")
	}
	const (
		tick      = 200 * time.Millisecond
		syncLimit = 5
		cutAfter  = syncLimit * tick
	)
	// Starting three JVMs beside a loaded race run takes its own share of
	// the time, so the scene gets two minutes of its own after it.
	begin := time.Now()
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer scancel()
	c, err := zkserver.StartEnsemble(sctx, 3, zkserver.WithPeerProxies(), zkserver.WithTickTime(tick),
		zkserver.WithSyncLimit(syncLimit), zkserver.WithInitLimit(10))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	started := time.Since(begin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Every member has its own view of its peers: 3 members x 2 peers x
	// 2 ports, one in four refusing (lower id to higher id's election port).
	links := c.PeerLinks()
	refusing := 0
	for _, l := range links {
		if l.Refusing {
			refusing++
			if l.Port != zkserver.ElectionPort || l.From >= l.To {
				t.Errorf("refusing link %v", l)
			}
		}
	}
	if len(links) != 12 || refusing != 3 {
		t.Fatalf("%d peer links, %d refusing; want 12 and 3", len(links), refusing)
	}
	for i := range c.Size() {
		conf, err := c.Conf(ctx, i)
		if err != nil || conf["syncLimit"] != "5" || conf["initLimit"] != "10" || conf["tickTime"] != "200" {
			t.Fatalf("member %d conf: %v, %v", i, conf, err)
		}
	}

	var leader int
	retry(t, "a leader", func() error {
		leader, err = c.Leader(ctx)
		return err
	})
	f := (leader + 1) % 3
	other := 3 - leader - f
	if mode, err := c.Mode(ctx, f); err != nil || mode != "follower" {
		t.Fatalf("member %d: %q, %v", f, mode, err)
	}
	// The follower's link to the leader carries the quorum connection.
	if px := c.PeerProxy(f, leader, zkserver.QuorumPort); px == nil || px.Stats().Active != 1 {
		t.Fatalf("follower %d's quorum proxy to leader %d: %v", f, leader, px)
	}
	onF := dial(t, []string{c.Addr(f)})
	rest := dial(t, []string{c.Addr(leader), c.Addr(other)})
	retry(t, "create", func() error {
		_, err := rest.Create("/part", []byte("before"), 0, zk.WorldACL(zk.PermAll))
		return err
	})
	retry(t, "read on the follower", func() error { _, _, err := onF.Get("/part"); return err })

	if err := c.PartitionMember(f); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	// The follower answers its clients by itself for a while.
	if _, _, err := onF.Get("/part"); err != nil {
		t.Fatalf("read on the cut follower right after the cut: %v", err)
	}
	// The rest keep a quorum and take writes.
	if _, err := rest.Set("/part", []byte("during"), -1); err != nil {
		t.Fatalf("write on the majority during the partition: %v", err)
	}
	// The follower stops serving once it has not heard from the leader for
	// syncLimit ticks.
	var down time.Duration
	for {
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		mode, err := c.Mode(pctx, f)
		pcancel()
		if err != nil || mode != "follower" {
			down = time.Since(cut)
			t.Logf("member %d stopped following %v after the cut (syncLimit x tick = %v): %q %v", f, down, cutAfter, mode, err)
			break
		}
		if time.Since(cut) > cutAfter+5*time.Second {
			t.Fatalf("member %d still follows %v after the cut", f, time.Since(cut))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if down < cutAfter/2 {
		t.Errorf("member %d stopped after %v, well before syncLimit x tick = %v", f, down, cutAfter)
	}
	// The rest keep a quorum: one of them leads (on a loaded machine they
	// may hold a new election first, so the answer is waited for).
	retry(t, "a leader among the rest during the partition", func() error {
		l, err := c.Leader(ctx)
		if err == nil && l == f {
			err = fmt.Errorf("the cut member %d leads", f)
		}
		return err
	})
	if _, err := rest.Set("/part", []byte("after"), -1); err != nil {
		t.Fatalf("write on the majority once the follower dropped out: %v", err)
	}
	synced := func(want string) func() error {
		return func() error {
			m, err := c.Mntr(ctx, leader)
			if err == nil && m["zk_synced_followers"] != want {
				err = errors.New("zk_synced_followers " + m["zk_synced_followers"])
			}
			return err
		}
	}
	retry(t, "the leader to drop the cut follower", synced("1"))

	if err := c.HealMember(f); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	if err := c.WaitReady(ctx, f); err != nil {
		t.Logf("member %d's log, the 4-letter words' noise left out:\n%s", f, quorumLines(c.LogTail(f, 100000)))
		t.Logf("leader %d's log:\n%s", leader, quorumLines(c.LogTail(leader, 100000)))
		t.Fatalf("healed member %d not serving %v after the heal (the ensemble started in %v, the cut %v ago): %v",
			f, time.Since(healed), started, time.Since(cut), err)
	}
	again := dial(t, []string{c.Addr(f)})
	retry(t, "catch up after healing", func() error {
		if _, err := again.Sync("/part"); err != nil {
			return err
		}
		data, _, err := again.Get("/part")
		if err == nil && string(data) != "after" {
			return errors.New("stale data " + string(data))
		}
		return err
	})
	if mode, err := c.Mode(ctx, f); err != nil || mode != "follower" {
		t.Fatalf("healed member %d: %q, %v", f, mode, err)
	}
	retry(t, "the leader to count the healed follower", synced("2"))
}

func TestPeerProxiesBadUse(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts an ensemble, about 2 s")
	}
	if _, ok := zkserver.FromEnv(); ok {
		t.Skip("TIERLOCK_ZK_SERVERS is set")
	}
	if _, err := zkserver.StartEnsemble(context.Background(), 3, zkserver.WithSyncLimit(0)); err == nil {
		t.Fatal("syncLimit 0 accepted")
	}
	c := start(t, 1)
	if err := c.PartitionMember(0); !errors.Is(err, zkserver.ErrNoPeerProxies) {
		t.Fatalf("PartitionMember without proxies: %v", err)
	}
	if err := c.HealMember(3); !errors.Is(err, zkserver.ErrBadMember) {
		t.Fatalf("HealMember(3): %v", err)
	}
	if c.PeerLinks() != nil {
		t.Fatal("standalone server has peer links")
	}
}

// Every member of an ensemble with peer proxies can be killed and restarted
// and serves again, whatever its id against the leader's: a restarted
// member whose id is below the leader's must still hear from the leader.
// Before openElectionFrom, such a member looked for a leader for ever (the
// stress soak's first follower restart failed so).
func TestRestartWithPeerProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts an ensemble and restarts a member, about 6 s")
	}
	if _, ok := zkserver.FromEnv(); ok {
		t.Skip("TIERLOCK_ZK_SERVERS is set: not starting servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := zkserver.StartEnsemble(ctx, 3, zkserver.WithPeerProxies(), zkserver.WithStartupTimeout(40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Followers first (ids below and above the leader's), then the leader.
	order := []int{}
	for i := 0; i < c.Size(); i++ {
		if i != leader {
			order = append(order, i)
		}
	}
	order = append(order, leader)
	for _, i := range order {
		if err := c.Kill(i); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(ctx, i); err != nil {
			t.Fatalf("member %d (leader was %d) did not serve again: %v", i, leader, err)
		}
	}
}

// quorumLines is a member's log without the lines its 4-letter-word polls
// leave while it does not serve (a stack trace each): what the election
// and the quorum said, the last 60 lines of it.
func quorumLines(log string) string {
	var keep []string
	for _, l := range strings.Split(log, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "at ") || strings.Contains(t, "ZooKeeperServer not running") ||
			strings.Contains(t, "Close of session 0x0") || strings.HasPrefix(t, "... ") || t == "" {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep[max(0, len(keep)-60):], "\n")
}
