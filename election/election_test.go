package election_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/election"
	"github.com/tierlock/tierlock/internal/faultproxy"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// observed collects what Observe sends until its context ends.
type observed struct {
	mu   sync.Mutex
	vals []string
	done chan struct{}
}

func observe(t *testing.T, e *election.Election) *observed {
	ctx, cancel := context.WithCancel(context.Background())
	o := &observed{done: make(chan struct{})}
	ch := e.Observe(ctx)
	go func() {
		defer close(o.done)
		for v := range ch {
			o.mu.Lock()
			o.vals = append(o.vals, v)
			o.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-o.done })
	return o
}

func (o *observed) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.vals)
}

// campaign runs Campaign on its own goroutine.
func campaign(ctx context.Context, e *election.Election, value string) <-chan context.Context {
	ch := make(chan context.Context, 1)
	go func() {
		held, err := e.Campaign(ctx, value)
		if err != nil {
			held = nil
		}
		ch <- held
	}()
	return ch
}

func leaderIs(t *testing.T, e *election.Election, want string) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, "leader "+want, func() bool {
		v, err := e.Leader(context.Background())
		return err == nil && v == want
	})
}

// Three candidates queue; one leads at a time, in queue order. The first
// resigns, the second's session closes; each time the next one leads only
// after the one before was told (its held context done), and an observer
// sees a, b, c in that order.
func TestOneLeaderAtATime(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	watcher := newElection(t, zktest.Connect(t, servers), p)
	obs := observe(t, watcher)
	if _, err := watcher.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader with no candidate: %v, want ErrNoLeader", err)
	}

	var es [3]*election.Election
	var sessions [3]*zklock.Session
	var pending [3]<-chan context.Context
	for i, v := range []string{"a", "b", "c"} {
		sessions[i] = zktest.Connect(t, servers)
		es[i] = newElection(t, sessions[i], p)
		pending[i] = campaign(ctx, es[i], v)
		zktest.Eventually(t, 10*time.Second, "candidate queued", func() bool {
			return len(zktest.Children(t, sessions[0].Conn(), p)) == i+1
		})
	}
	held := <-pending[0]
	if held == nil {
		t.Fatal("first campaign failed")
	}
	leaderIs(t, watcher, "a")
	for _, c := range pending[1:] {
		select {
		case <-c:
			t.Fatal("a second leader while the first leads")
		default:
		}
	}
	if err := es[0].Resign(held); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(held), election.ErrResigned) {
		t.Fatalf("resigned context: %v", context.Cause(held))
	}
	held = <-pending[1]
	if held == nil {
		t.Fatal("second campaign failed")
	}
	leaderIs(t, watcher, "b")
	select {
	case <-pending[2]:
		t.Fatal("a second leader while b leads")
	default:
	}
	// Observe skips a leadership shorter than its own reading (as
	// documented): let it see b before b goes.
	zktest.Eventually(t, 10*time.Second, "observer saw b", func() bool { return len(obs.get()) >= 2 })
	sessions[1].Close()
	if !errors.Is(context.Cause(held), zklock.ErrLockLost) {
		t.Fatalf("after its session closed, b's context: %v", context.Cause(held))
	}
	last := <-pending[2]
	if last == nil {
		t.Fatal("third campaign failed")
	}
	leaderIs(t, watcher, "c")
	zktest.Eventually(t, 10*time.Second, "observer saw a, b, c", func() bool { return len(obs.get()) >= 3 })
	if got := obs.get(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("observed %v, want [a b c]", got)
	}
	if err := es[2].Resign(last); err != nil {
		t.Fatal(err)
	}
	if err := es[2].Resign(last); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("second Resign: %v, want ErrNotLeader", err)
	}
}

// The leader's traffic stops until the server expires its session: it is
// told (its held context done, the cause wrapping zklock.ErrLockLost)
// before the follower leads, and an observer sees the follower take over.
func TestFailoverOnExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out a session expiry, about 2 s")
	}
	servers := zktest.Servers(t)
	px, err := faultproxy.New(servers[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	p := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	ls := zktest.Connect(t, []string{px.Addr()}, zklock.WithSessionTimeout(2*time.Second))
	leader := newElection(t, ls, p)
	held, err := leader.Campaign(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	obs := observe(t, newElection(t, zktest.Connect(t, servers), p))
	zktest.Eventually(t, 10*time.Second, "observer saw the leader", func() bool { return len(obs.get()) == 1 })
	fs := zktest.Connect(t, servers)
	follower := newElection(t, fs, p)
	next := campaign(ctx, follower, "new")
	zktest.Eventually(t, 10*time.Second, "follower queued", func() bool { return len(zktest.Children(t, fs.Conn(), p)) == 2 })

	px.Pause()
	var toldAt, ledAt time.Time
	var fheld context.Context
	heldDone := held.Done()
	for toldAt.IsZero() || ledAt.IsZero() {
		select {
		case <-heldDone:
			toldAt, heldDone = time.Now(), nil
		case fheld = <-next:
			ledAt, next = time.Now(), nil
		case <-ctx.Done():
			t.Fatalf("told %v, led %v", !toldAt.IsZero(), !ledAt.IsZero())
		}
	}
	px.Resume()
	if fheld == nil {
		t.Fatal("follower's campaign failed")
	}
	t.Logf("old leader told %v before the new one led", ledAt.Sub(toldAt))
	if !toldAt.Before(ledAt) {
		t.Fatalf("old leader told at %v, after the new one led at %v", toldAt, ledAt)
	}
	if !errors.Is(context.Cause(held), zklock.ErrLockLost) {
		t.Fatalf("old leader's cause: %v", context.Cause(held))
	}
	zktest.Eventually(t, 10*time.Second, "observer saw the change", func() bool { return len(obs.get()) == 2 })
	if got := obs.get(); !slices.Equal(got, []string{"old", "new"}) {
		t.Fatalf("observed %v", got)
	}
	if err := leader.Resign(held); !errors.Is(err, zklock.ErrLockLost) {
		t.Fatalf("Resign of a lost leadership: %v, want ErrLockLost", err)
	}
	if err := follower.Resign(fheld); err != nil {
		t.Fatal(err)
	}
}

// Bad input gets an error, never a panic, and loses nothing: the election
// still works afterwards.
func TestBadInput(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := zktest.Context(t, 20*time.Second)
	s := zktest.Connect(t, servers)
	e := newElection(t, s, p)
	other := newElection(t, s, p+"-other")
	var nilE *election.Election
	var nilCtx context.Context

	held, err := e.Campaign(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		want error
		call func() error
	}{
		{"New nil session", zklock.ErrNilSession, func() error { _, err := election.New(nil, p); return err }},
		{"New bad path", zklock.ErrInvalidPath, func() error { _, err := election.New(s, "no/slash"); return err }},
		{"New bad option", zklock.ErrInvalidOption, func() error {
			_, err := election.New(s, p, zklock.WithRecheckInterval(-1))
			return err
		}},
		{"nil Campaign", election.ErrNil, func() error { _, err := nilE.Campaign(ctx, "x"); return err }},
		{"Campaign nil ctx", zklock.ErrNilContext, func() error { _, err := e.Campaign(nilCtx, "x"); return err }},
		{"Campaign cancelled", context.Canceled, func() error { _, err := e.Campaign(zktest.Cancelled(), "y"); return err }},
		// Issue 21, item 4: a value too large for the server is refused
		// before anything is sent, instead of taking the session down.
		{"Campaign value of 1.1MB", zklock.ErrInvalidOption, func() error {
			_, err := e.Campaign(ctx, strings.Repeat("v", 1100<<10))
			return err
		}},
		{"nil Resign", election.ErrNil, func() error { return nilE.Resign(held) }},
		{"Resign nil ctx", zklock.ErrNilContext, func() error { return e.Resign(nilCtx) }},
		{"Resign a plain ctx", election.ErrNotLeader, func() error { return e.Resign(ctx) }},
		{"Resign another election's", election.ErrNotLeader, func() error { return other.Resign(held) }},
		{"nil Leader", election.ErrNil, func() error { _, err := nilE.Leader(ctx); return err }},
		{"Leader nil ctx", zklock.ErrNilContext, func() error { _, err := e.Leader(nilCtx); return err }},
		{"Leader of none", election.ErrNoLeader, func() error { _, err := other.Leader(ctx); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := zktest.NoPanic(t, c.call); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	for _, ch := range []<-chan string{nilE.Observe(ctx), e.Observe(nilCtx)} {
		if _, open := <-ch; open {
			t.Fatal("Observe on bad input sent a value")
		}
	}
	// Nothing was lost: x still leads, and resigns once.
	if v, err := e.Leader(ctx); v != "x" || err != nil || held.Err() != nil {
		t.Fatalf("after bad input: leader %q, %v; held %v", v, err, held.Err())
	}
	if err := e.Resign(held); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := e.Campaign(ctx, "x"); !errors.Is(err, zklock.ErrSessionClosed) {
		t.Fatalf("Campaign on a closed session: %v", err)
	}
	if _, open := <-e.Observe(ctx); open {
		t.Fatal("Observe on a closed session sent a value")
	}
}

// Observe sets no data watch (it keeps one children watch on the path,
// set again only when it fires; ZooKeeper 3.8's four-letter words count
// data watches only, so that one cannot be counted here) and follows the
// leader through a change.
func TestObserveWatches(t *testing.T) {
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := zktest.Context(t, 20*time.Second)
	os := zktest.Connect(t, servers)
	a := newElection(t, zktest.Connect(t, servers), p)
	held, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b := newElection(t, zktest.Connect(t, servers), p)
	next := campaign(ctx, b, "b")
	obs := observe(t, newElection(t, os, p))
	zktest.Eventually(t, 10*time.Second, "a observed", func() bool { return len(obs.get()) == 1 })
	if n := zktest.WatchesBySession(t, p)[os.SessionID()]; n != 0 {
		t.Fatalf("observer holds %d data watches under %s, want 0", n, p)
	}
	if err := a.Resign(held); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "b observed", func() bool { return len(obs.get()) == 2 })
	if n := zktest.WatchesBySession(t, p)[os.SessionID()]; n != 0 {
		t.Fatalf("after the change the observer holds %d data watches, want 0", n)
	}
	if fheld := <-next; fheld == nil || b.Resign(fheld) != nil {
		t.Fatal("b's campaign")
	}
}

// Issue 37, item 3: an operator deletes the leader's node (tierlock break)
// right after it was granted. With both candidates on one server, the old
// leader's held context is cancelled as the server's event reaches it,
// about when the next candidate's Campaign returns: the server sends the
// delete's event to both, and the next one must still list the queue
// before it leads, so the old one usually hears first. Not always: in a
// loaded make test (a busy core beside the race run) the next led while
// the old one's event was still on its way. What is checked is the
// margin: the old context ends within leadMargin of the next one's lead.
// Without the own-node watch from the grant on (zklock.WithNodeWatch),
// the old leader heard of it a quarter of the session timeout (2.5 s)
// into its leadership.
func TestOperatorDeleteEndsLeadershipFirst(t *testing.T) {
	const leadMargin = time.Second
	servers := zktest.Servers(t)
	p := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	operator := zktest.Connect(t, servers)
	for round := range 3 {
		// 10 s: a hold without WithNodeWatch would watch its node 2.5 s
		// after the grant.
		ls := zktest.Connect(t, servers, zklock.WithSessionTimeout(10*time.Second))
		leader := newElection(t, ls, p)
		held, err := leader.Campaign(ctx, "old")
		if err != nil {
			t.Fatal(err)
		}
		// The watch is set by a read right after the grant (a delete
		// before that read arrives is heard from its reply instead): wait
		// for it, half a second at most.
		for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if zktest.WatchesBySession(t, p)[ls.SessionID()] == 1 {
				break
			}
		}
		follower := newElection(t, zktest.Connect(t, servers), p)
		type led struct {
			held    context.Context
			oldLive bool // the old leader's context was live when Campaign returned
		}
		next := make(chan led, 1)
		go func() {
			h, err := follower.Campaign(ctx, "new")
			if err != nil {
				h = nil
			}
			next <- led{h, held.Err() == nil}
		}()
		zktest.Eventually(t, 10*time.Second, "the next candidate queued", func() bool {
			return len(zktest.Children(t, operator.Conn(), p)) == 2
		})
		ps, err := zklock.ListParticipants(ctx, operator, p)
		if err != nil || len(ps) != 2 {
			t.Fatalf("participants %v, %v", ps, err)
		}
		if err := operator.Conn().Delete(p+"/"+ps[0].Node, -1); err != nil {
			t.Fatal(err)
		}
		got := <-next
		if got.held == nil {
			t.Fatal("the next campaign failed")
		}
		if got.oldLive {
			select {
			case <-held.Done():
				t.Logf("round %d: the old leader's context ended after the next one led", round)
			case <-time.After(leadMargin):
				t.Fatalf("round %d: the old leader's context still live %v after the next candidate led", round, leadMargin)
			}
		}
		if !errors.Is(context.Cause(held), zklock.ErrNodeDeleted) {
			t.Errorf("round %d: old leader's cause %v, want ErrNodeDeleted", round, context.Cause(held))
		}
		if err := follower.Resign(got.held); err != nil {
			t.Fatal(err)
		}
	}
}
