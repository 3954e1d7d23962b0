package writes_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// The callers: what zklock's acquisitions, releases and transactions do
// with the write path, one step at a time. A lock caller acquires its own
// lock path (create, then protection mode after an unknown outcome, the
// parents made after NoNode), runs transactions guarded by its node,
// releases, and again; a transaction caller runs the session's
// transactions. Any wait may end (the caller's ctx): the caller gives its
// write up (Queue.GiveUp, all Lock.giveUp does, or Queue.Await's steps),
// and the write path cleans up after it. A caller told a transaction's outcome is unknown
// reads back at once, as the docs tell it to.

type cstate uint8

const (
	sReady      cstate = iota // about to take its next action
	sCreateSent               // waiting for its create to be on the wire
	sCreateDone               // waiting for its create's answer
	sProtect                  // its create's outcome unknown: looking for its GUID
	sParent                   // making the lock path, after NoNode
	sTxn                      // waiting for its transaction
	sTxnWire                  // gave up its transaction: waiting for it to be on the wire
	sReadBack                 // reading back a transaction of unknown outcome
	sDone
)

var stateNames = [...]string{"ready", "create-sent", "create-done", "protect", "parent", "txn", "txn-wire", "read-back", "done"}

func (s cstate) String() string { return stateNames[s] }

type action uint8

const (
	actAcquire action = iota
	actTxn            // a transaction that applies
	actStale          // a transaction refused at its own op (a stale version)
	actRelease
)

// caller is one of the world's callers.
type caller struct {
	id      int
	path    string // its lock path; "" for a transaction caller
	plan    []action
	state   cstate
	prefix  string
	w       *writes.Write
	rec     *rec
	node    string // held
	owner   int64
	pending writes.Result // what it will be told once its request is on the wire
	onWire  <-chan struct{}
	reply   bool     // its own request's answer arrived
	acl     []zk.ACL // its nodes' (a long digest id makes a create large)
	pad     int      // bytes of data in its transactions' tag nodes
}

// errCtx is the caller's ctx's error.
var errCtx = context.Canceled

var anyone = zk.WorldACL(zk.PermAll)

// setUp makes the world's tree and callers from the program generator.
func (w *world) setUp(gen *rand.Rand) {
	mk := func(p string) {
		if _, err := w.tree.Create(0, p, nil, 0, anyone); err != nil {
			panic(err)
		}
	}
	mk("/d")
	mk("/d/x")
	n := 1 + gen.IntN(4)
	for i := range n {
		c := &caller{id: i, acl: anyone, pad: gen.IntN(3) * gen.IntN(200)}
		if gen.IntN(3) == 0 {
			c.acl = append(slices.Clone(anyone), zk.DigestACL(zk.PermRead, fmt.Sprintf("u%0*d", gen.IntN(400), 0), "pw")...)
		}
		if gen.IntN(4) > 0 {
			c.path = fmt.Sprintf("/l%d", i)
			mk(c.path)
			for range 1 + gen.IntN(4) {
				c.plan = append(c.plan, actAcquire)
				for range gen.IntN(4) {
					c.plan = append(c.plan, txnAction(gen))
				}
				c.plan = append(c.plan, actRelease)
			}
		} else {
			for range 1 + gen.IntN(4) {
				c.plan = append(c.plan, txnAction(gen))
			}
		}
		w.callers = append(w.callers, c)
	}
}

func txnAction(gen *rand.Rand) action {
	if gen.IntN(3) == 0 {
		return actStale
	}
	return actTxn
}

func (w *world) lockPaths() []string {
	var ps []string
	for _, c := range w.callers {
		if c.path != "" {
			ps = append(ps, c.path)
		}
	}
	return ps
}

// ready reports whether caller c can take a step.
func (w *world) ready(c *caller) bool {
	switch c.state {
	case sReady:
		return true
	case sCreateSent:
		return isClosed(c.w.Sent)
	case sCreateDone, sTxn:
		return isDone(c.w)
	case sProtect:
		return w.state == connUp || w.closed
	case sParent, sReadBack:
		return c.reply
	case sTxnWire:
		return isClosed(c.onWire)
	}
	return false
}

// mayEnd reports whether caller c's ctx can end now.
func mayEnd(c *caller) bool {
	return c.state == sCreateSent || c.state == sCreateDone || c.state == sTxn
}

// step moves caller c on.
func (w *world) step(c *caller) {
	switch c.state {
	case sReady:
		w.next(c)
	case sCreateSent:
		c.state = sCreateDone // its listing is not modelled
	case sCreateDone:
		w.created(c)
	case sProtect:
		if w.closed {
			// The retry meets the session's close: given up with a create
			// of unknown outcome, protection mode sweeps for its GUID.
			w.bg = append(w.bg, &bgJob{sweepPath: c.path, sweepPrefix: c.prefix, owner: w.sid})
			c.state = sDone
			return
		}
		w.findOwn(c)
	case sParent:
		c.reply = false
		w.create(c)
	case sTxn:
		w.told(c, c.w.Result(), false)
	case sTxnWire:
		r := writes.SettledOr(c.w, c.pending)
		if r.Verdict == writes.Unknown {
			w.cover(coverWireUnknown)
		} else {
			w.cover(coverWireSettled)
		}
		if w.noTap {
			w.cover(coverNoTapGiveUp)
		}
		w.told(c, r, true)
	case sReadBack:
		c.reply = false
		c.state = sReady
	}
}

// next takes c's next action.
func (w *world) next(c *caller) {
	if len(c.plan) == 0 {
		c.state = sDone
		return
	}
	a := c.plan[0]
	c.plan = c.plan[1:]
	switch a {
	case actAcquire:
		c.prefix = fmt.Sprintf("%s/_c_%08x-0000-4000-8000-%012x-lock-", c.path, w.seed&0xffffffff, w.recs.n+1)
		w.create(c)
	case actRelease:
		if c.node != "" {
			node := c.node
			w.recs.callerDel, w.recs.handled = true, true
			w.q.Delete(c.path, node, c.owner, func(err error) { w.deleteTold(node, err) })
			w.recs.callerDel, w.recs.handled = false, false
			c.node = ""
		}
	default:
		w.txn(c, a)
	}
}

func (w *world) create(c *caller) {
	c.w = w.q.Create(c.path, c.prefix, nil, c.acl)
	w.creates++
	c.rec = w.recs.queued(c.w, c.path)
	c.rec.key = c.prefix
	c.state = sCreateSent
	w.logf("caller %d: create %s", c.id, short(c.prefix))
}

// txn queues c's transaction: a lock caller's is guarded by its node (it
// is skipped when the acquisition failed); a stale one is refused at its
// own op; every one ends with the create of a tag node of its own, which
// says whether (and when) it was applied.
func (w *world) txn(c *caller, a action) {
	if c.path != "" && c.node == "" {
		return
	}
	tag := fmt.Sprintf("/d/t%d", w.recs.n+1)
	var ops []any
	if c.node != "" {
		ops = append(ops, &zk.CheckVersionRequest{Path: c.node, Version: -1})
	}
	if a == actStale {
		ops = append(ops, &zk.SetDataRequest{Path: "/d/x", Version: 99})
	}
	ops = append(ops, &zk.CreateRequest{Path: tag, Data: make([]byte, c.pad), Acl: anyone})
	c.w = w.q.Txn(ops)
	c.rec = w.recs.queued(c.w, writes.OpPath(ops[0]))
	c.state = sTxn
	w.logf("caller %d: txn %s", c.id, tag)
}

// created handles c's create's answer: a node held, protection mode, the
// parents made, or the acquisition failed.
func (w *world) created(c *caller) {
	r := c.w.Result()
	w.recs.observe(w, c.rec, r, false)
	switch {
	case r.Verdict == writes.Applied && r.Session != 0:
		c.node, c.owner, c.state = c.w.Result().Results[0].String, r.Session, sReady
	case r.Verdict == writes.Applied || r.Verdict == writes.Unknown:
		if r.Verdict == writes.Applied {
			w.cover(coverOwnerUnknown)
		}
		c.state = sProtect
	case r.Verdict == writes.Refused && errors.Is(r.Err, zk.ErrNoNode):
		w.cover(coverParent)
		c.state = sParent
		p := c.path
		w.hand("create "+p, func(w *world) writes.Answer {
			_, err := w.tree.Create(w.sid, p, nil, 0, anyone)
			return writes.Answer{Err: err}
		}, func(*world, writes.Answer) { c.reply = true })
	case r.Verdict == writes.Closed:
		c.state = sDone
	default:
		w.failed(c)
	}
}

// failed ends c's acquisition: what it planned under the hold is dropped.
func (w *world) failed(c *caller) {
	for len(c.plan) > 0 && c.plan[0] != actRelease {
		c.plan = c.plan[1:]
	}
	if len(c.plan) > 0 {
		c.plan = c.plan[1:]
	}
	c.state = sReady
}

// findOwn is protection mode: the node with c's GUID, if the server has
// it in this session, is c's; else c creates again, with the same GUID.
func (w *world) findOwn(c *caller) {
	kids, _, _ := w.tree.Children(c.path)
	for _, k := range kids {
		node := c.path + "/" + k
		if strings.HasPrefix(node, c.prefix) {
			if _, st := w.tree.Exists(node); st != nil && st.EphemeralOwner == w.sid {
				c.node, c.owner, c.state = node, w.sid, sReady
				w.cover(coverFoundOwn)
				w.logf("caller %d: found its node %s", c.id, short(node))
				return
			}
		}
	}
	w.cover(coverCreatedAgain)
	w.create(c)
}

// end ends c's wait: its ctx is done. A transaction's caller does what
// Queue.Await does (GiveUpTold, then the wait for the wire); an
// acquisition's, what Lock.giveUp does.
func (w *world) end(c *caller) {
	w.budget.ctxEnds--
	w.logf("caller %d: ctx ends (%s)", c.id, c.state)
	if c.state == sTxn {
		r, onWire := writes.GiveUpTold(w.q, c.w, errCtx)
		w.coverTold(r, onWire)

		if onWire == nil {
			w.told(c, r, true)
			return
		}
		c.pending, c.onWire, c.state = r, onWire, sTxnWire
		return
	}
	prefix := c.prefix
	sweep := func() {
		w.cover(coverSweep)
		w.bg = append(w.bg, &bgJob{sweepPath: c.path, sweepPrefix: prefix, owner: w.sid})
	}
	fate := w.q.GiveUp(c.w, sweep) // which cleans up after a create that had ended
	w.coverFate(fate)
	switch fate {
	case writes.TakenBack:
		w.recs.toldNotApplied(w, c.rec)
	case writes.Over:
		w.recs.observe(w, c.rec, c.w.Result(), true)
	}
	w.failed(c)
}

// told tells c its transaction's outcome (gaveUp: as it gave up); an
// unknown one is read back at once.
func (w *world) told(c *caller, r writes.Result, gaveUp bool) {
	w.recs.observe(w, c.rec, r, gaveUp)
	c.state = sReady
	if r.Verdict != writes.Unknown {
		return
	}
	w.cover(coverReadBack)
	ops := c.w.Ops()
	tag := writes.OpPath(ops[len(ops)-1])
	w.hand("read back "+tag, func(w *world) writes.Answer {
		ok, _ := w.tree.Exists(tag)
		if !ok {
			return writes.Answer{Err: zk.ErrNoNode}
		}
		return writes.Answer{}
	}, func(*world, writes.Answer) { c.reply = true })
	c.state = sReadBack
	if len(w.unwritten) > 0 {
		c.rec.readBack = w.unwritten[len(w.unwritten)-1][0]
	}
}
