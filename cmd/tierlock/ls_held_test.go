package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// heldJSON is what ls -json of a root says of one lock and its holder.
type heldJSON struct {
	Name    string
	Waiting int
	AgeSec  float64 `json:"age_seconds"`
	Holder  *struct {
		Label      string
		HeldSec    *float64 `json:"held_seconds"`
		HeldExact  bool     `json:"held_exact"`
		Token      int64    `json:"token"`
		TokenExact bool     `json:"token_exact"`
	}
}

// A holder's row says how long it has held, apart from how long ago it
// queued, and its fencing token; each exact when ZooKeeper shows it, else
// a bound marked as such, never more than is known:
//   - alone: took a free lock, nothing changed since: HELD is QUEUED, and
//     TOKEN is its Hold.Token, both exact;
//   - handed: queued, waited 700 ms, got the lock on the holder's release,
//     and another process queued behind it 300 ms later: HELD is at least
//     the time since that process queued (the hand-off came before it),
//     well below QUEUED; TOKEN at least its node's czxid, at most its
//     Hold.Token;
//   - freed: got the lock on a release, the last change to the queue: the
//     hand-off's time is not in ZooKeeper, HELD is "?".
//
// ls of a lock path says the same in its heading.
func TestLsHeldAndToken(t *testing.T) {
	hl := newHeldLocks(t)
	r := tierlock(t, "ls", "-json", hl.root)
	listed := time.Now()
	r.want(t, exitOK)
	var doc struct{ Locks []heldJSON }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Locks) != 3 {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	locks := map[string]heldJSON{}
	for _, l := range doc.Locks {
		if l.Holder == nil {
			t.Fatalf("%s: no holder: %s", l.Name, r.stdout)
		}
		locks[l.Name] = l
	}
	hl.checkAlone(t, locks["alone"])
	hl.checkHanded(t, locks["handed"], listed)
	hl.checkFreed(t, locks["freed"])
	hl.checkTables(t)
}

// heldLocks is TestLsHeldAndToken's root of three locks, their holds,
// and when handed's first holder released it.
type heldLocks struct {
	root                 string
	s                    *zklock.Session
	alone, freed, handed *zklock.Hold
	released             time.Time
}

func newHeldLocks(t *testing.T) heldLocks {
	hl := heldLocks{root: zktest.Path(t)}
	ctx := zktest.Context(t, 30*time.Second)
	s1, s2, s3 := connect(t), connect(t), connect(t)
	hl.s = s1
	hl.alone = acquire(t, ctx, newLock(t, s1, hl.root+"/alone"))
	handoff := func(name string) (*zklock.Hold, time.Time) {
		p := hl.root + "/" + name
		first := acquire(t, ctx, newLock(t, s1, p))
		next := acquireAsync(ctx, newLock(t, s2, p, zklock.WithLabel(name)))
		waitQueue(t, s1, p, 2)
		time.Sleep(700 * time.Millisecond)
		released := time.Now()
		if err := first.Release(); err != nil {
			t.Fatal(err)
		}
		return held(t, next), released
	}
	hl.freed, _ = handoff("freed")
	hl.handed, hl.released = handoff("handed")
	time.Sleep(300 * time.Millisecond)
	acquireAsync(ctx, newLock(t, s3, hl.root+"/handed"))
	waitQueue(t, s1, hl.root+"/handed", 2)
	return hl
}

// czxid is the creation zxid of h's node.
func (hl heldLocks) czxid(t *testing.T, h *zklock.Hold) int64 {
	t.Helper()
	_, st, err := hl.s.Conn().Exists(h.Node())
	if err != nil {
		t.Fatal(err)
	}
	return st.Czxid
}

func (hl heldLocks) checkAlone(t *testing.T, a heldJSON) {
	t.Helper()
	if h := a.Holder; h.HeldSec == nil || !h.HeldExact || *h.HeldSec != a.AgeSec || !h.TokenExact || h.Token != hl.alone.Token() {
		t.Errorf("alone: %+v, want held exactly age_seconds %v and token exactly %d", *h, a.AgeSec, hl.alone.Token())
	}
}

func (hl heldLocks) checkHanded(t *testing.T, l heldJSON, listed time.Time) {
	t.Helper()
	since := listed.Sub(hl.released).Seconds()
	switch h := l.Holder; {
	case h.Label != "handed" || l.Waiting != 1:
		t.Errorf("handed: holder %q, %d waiting", h.Label, l.Waiting)
	case h.HeldSec == nil || h.HeldExact:
		t.Errorf("handed: held %v (exact %v), want a lower bound", h.HeldSec, h.HeldExact)
	case *h.HeldSec > since+0.05:
		t.Errorf("handed: held at least %.3fs, but the hand-off was %.3fs ago", *h.HeldSec, since)
	case l.AgeSec-*h.HeldSec < 0.6:
		t.Errorf("handed: held %.3fs, queued %.3fs ago: the 700-ms wait is not told apart", *h.HeldSec, l.AgeSec)
	case h.TokenExact || h.Token != hl.czxid(t, hl.handed) || h.Token > hl.handed.Token():
		t.Errorf("handed: token %d (exact %v), want at least its czxid %d (Hold.Token %d)",
			h.Token, h.TokenExact, hl.czxid(t, hl.handed), hl.handed.Token())
	}
}

func (hl heldLocks) checkFreed(t *testing.T, l heldJSON) {
	t.Helper()
	if h := l.Holder; h.HeldSec != nil || h.TokenExact || h.Token != hl.czxid(t, hl.freed) {
		t.Errorf("freed: held %v, token %d (exact %v), want no held time and at least its czxid %d",
			h.HeldSec, h.Token, h.TokenExact, hl.czxid(t, hl.freed))
	}
}

// checkTables checks that the table of the root, and the heading of a
// lock path's queue, show the same, each bound marked.
func (hl heldLocks) checkTables(t *testing.T) {
	t.Helper()
	r := tierlock(t, "ls", hl.root)
	r.want(t, exitOK)
	c := cells(t, r.stdout, "alone")
	if c["HELD"] != c["QUEUED"] || c["TOKEN"] != strconv.FormatInt(hl.alone.Token(), 10) {
		t.Errorf("alone: %q, want HELD = QUEUED, TOKEN %d:\n%s", c, hl.alone.Token(), r.stdout)
	}
	token := strconv.FormatInt(hl.czxid(t, hl.handed), 10)
	c = cells(t, r.stdout, "handed")
	if !strings.HasPrefix(c["HELD"], "≥") || c["HELD"] == c["QUEUED"] || c["TOKEN"] != "≥"+token {
		t.Errorf("handed: %q, want HELD ≥ a bound, TOKEN ≥%s:\n%s", c, token, r.stdout)
	}
	if c = cells(t, r.stdout, "freed"); c["HELD"] != "?" || !strings.HasPrefix(c["TOKEN"], "≥") {
		t.Errorf("freed: %q, want HELD ?, TOKEN a bound:\n%s", c, r.stdout)
	}
	tierlock(t, "ls", hl.root+"/handed").want(t, exitOK, "  (2 nodes)  held ≥", "  token ≥"+token, "SEQ         QUEUED")
	tierlock(t, "ls", hl.root+"/alone").want(t, exitOK, "  token "+strconv.FormatInt(hl.alone.Token(), 10))
}

// watch adds what it saw: a holder it listed before has held at least
// since that listing, though ZooKeeper no longer shows when it took over.
func TestWatchHeldSince(t *testing.T) {
	root := zktest.Path(t)
	ctx := zktest.Context(t, 30*time.Second)
	s1, s2, s3 := connect(t), connect(t), connect(t)
	a := acquire(t, ctx, newLock(t, s1, root+"/job", zklock.WithLabel("a")))
	waited := acquireAsync(ctx, newLock(t, s2, root+"/job", zklock.WithLabel("b")))
	lines, stop, errOut := watchJSON(t, ctx, root)
	awaitEvent(t, lines, "listed", "job", nil)
	released := time.Now()
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	b := held(t, waited)
	l := awaitEvent(t, lines, "new-holder", "job", holderLabel("b"))
	if l.Holder.HeldSec != nil || l.Holder.Token == 0 || l.Holder.Token > b.Token() {
		t.Errorf("new-holder: held %v, token %d: want unknown, and at most Hold.Token %d", l.Holder.HeldSec, l.Holder.Token, b.Token())
	}
	time.Sleep(600 * time.Millisecond)
	acquireAsync(ctx, newLock(t, s3, root+"/job"))
	l = awaitEvent(t, lines, "queue", "job", func(l watchLine) bool { return l.Waiting == 1 })
	since := time.Since(released).Seconds()
	if h := l.Holder.HeldSec; h == nil || l.Holder.HeldExact || *h < 0.5 || *h > since+0.05 {
		t.Errorf("queue: held %v (exact %v), want at least the 600 ms since watch saw it take over, at most %.3fs",
			h, l.Holder.HeldExact, since)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("watch exited %d: %s", code, errOut.String())
	}
}
