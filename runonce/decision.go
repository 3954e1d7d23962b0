package runonce

import (
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/runrec"
)

// decision is what the rule decided of one attempt of a claim (one read
// of the run node and, most often, one write conditional on the version
// read), and on what.
type decision struct {
	verdict runrec.Verdict
	basis   basis     // what decided the verdict
	read    reading   // the record the attempt read
	lock    lockSight // what the attempt saw of the job's lock
	wrote   written   // its write, when one was answered
	// sinceLast is the time from the last run to this attempt's timer, by
	// the server's clock (ms); for a named tick, from the last run's tick.
	sinceLast int64
	// near: a named tick's attempt found its tick run by the last run, one
	// without a tick from a host whose clock is ahead, near it by this
	// host's clock, and that run's lock held (heldNamed).
	near bool
}

// decided reports whether the record decided d: the fleet's state was
// read, and the verdict is the rule's (not the lock's, not a failure's).
func (d decision) decided() bool { return d.basis != undecided }

// basis is what a decision stands on.
type basis int

const (
	undecided basis = iota // nothing of the record: the job's lock found held, or a write that failed
	byClock                // the server's clock: the write's reply, or the read alone (a skip known without a write)
	byNames                // the ticks' names (tick.go)
	firstRun               // no run node: the attempt created it, and runs
	noRecord               // a late tick, and no run node: not run
)

// reading is the run node as an attempt read it.
type reading struct {
	last runrec.Last // the job's state, derived from the record
	stat *zk.Stat
	at   time.Time // when the read was answered
}

// lockSight is what an attempt saw of the job's lock before its write.
type lockSight struct {
	looked  bool   // it looked (lost.go)
	holder  string // the holder's node then: "" free
	refused bool   // the attempt's own take found it held (tick.go, a first run)
}

// free reports whether the attempt looked at the lock and found no
// holder.
func (s lockSight) free() bool { return s.looked && s.holder == "" }

// written is an attempt's write of the run node and its reply.
type written struct {
	rec  runrec.Record // what it wrote
	stat *zk.Stat      // the reply's; nil: no write answered
	// late is set for a run not confirmed: its write's answer came this
	// long after Claim's entry.
	late time.Duration
	// steppedBack: it would have run, but stepped back (WithSpread, or the
	// lock held).
	steppedBack bool
}
