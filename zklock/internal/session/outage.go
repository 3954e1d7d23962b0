package session

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/mono"
	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// An outage, as an operator is told of it: the session has no connection
// to ZooKeeper (it lost the one it had, or never made one), from the first
// sign to the next connection with a session. It is told in two lines at Warn, one when it
// begins and one when it ends, once per outage however many locks the
// session has; the second says how long it lasted and what it cost (the
// holds it ended, whether the session survived it, the dial attempts that
// failed). Before this, the log's last word on an outage was "cannot reach
// ZooKeeper", still there after the servers answered again. An outage that
// begins as this process resumes from a stall (mono's watch measured its
// monotonic clock jump: a SIGSTOP, a suspend) went with the stall: both
// lines say the stall's length (stalled_for), and the second counts the
// outage from the stall's start, not from when the process, resumed,
// found the connection gone.
type outage struct {
	log        *slog.Logger // the floor's
	expiryOnly bool         // holds survive a disconnection (Config.ExpiryOnly)
	// unanswered (nil under Wrap) is the tap's connection whose server has
	// not answered the handshake yet (wire's Tap.Unanswered).
	unanswered func() error

	mu      sync.Mutex
	since   time.Time // zero: no outage
	cause   string    // what began it
	holds   int       // holds it ended
	dials   int       // dial attempts that failed during it
	dialErr error     // the last one's error
	// stall is this process's stall it began with (stalled): the
	// connection lost while the process was stopped (mono's watch).
	stall   mono.Stall
	stalled bool
	// lapsed counts the holds a lapse of the lease ended as this process
	// resumed from lapsedIn, before an outage of that stall began
	// (stallEnded): the outage counts them as its own when it begins.
	lapsedIn mono.Stall
	lapsed   int
}

// stallEcho is how soon after a stall of this process an outage that
// begins is the stall's: a connection the stall cut is found gone as the
// process resumes (its read fails at once).
const stallEcho = 2 * time.Second

// stalledBefore returns the stall of this process that at, an outage's
// beginning, follows, if any.
func stalledBefore(at time.Time) (mono.Stall, bool) {
	return mono.StallIn(at.Add(-stallEcho), at)
}

// began returns when the outage under way began; zero when none is
// (Floor.OutageSince).
func (o *outage) began() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.since
}

// begins starts an outage, unless one is under way, with cause (a
// disconnection, a dial that failed, an expiry) and the holds it ends at
// once; log is told of the first.
func (o *outage) begins(cause string, holds int) {
	o.mu.Lock()
	if !o.since.IsZero() {
		o.holds += holds
		o.mu.Unlock()
		return
	}
	o.since, o.cause, o.holds, o.dials, o.dialErr = mono.Now().Std(), cause, holds, 0, nil
	o.stall, o.stalled = stalledBefore(o.since)
	if o.stalled && o.lapsed > 0 && o.lapsedIn.From.Equal(o.stall.From) {
		o.holds += o.lapsed // the stall ended them: its lapse told them first
	}
	o.lapsed = 0
	stall, stalled, holds := o.stall, o.stalled, o.holds
	o.mu.Unlock()
	what := "holds end, acquisitions wait for a connection"
	if o.expiryOnly {
		what = "holds are kept until the session expires, acquisitions wait for a connection"
	}
	attrs := []any{"cause", cause, "holds_ended", holds}
	if stalled {
		what += "; the connection went with this process's stall (stopped, suspended or paused: its monotonic clock jumped)"
		attrs = append(attrs, "stalled_for", roundStall(stall))
	}
	o.log.Warn("no connection to ZooKeeper: "+what, attrs...)
}

// roundStall is s's length as the lines tell it.
func roundStall(s mono.Stall) time.Duration { return s.Len().Round(time.Millisecond) }

// dialed notes a dial of the session's connection (under Dial): a
// failure begins an outage if none is under way (Dial's first dial,
// or a connection lost with nobody to tell: see observe) and is counted.
// A connection whose server never answered the handshake is a failure
// too, told after the dial that made it (wire.UnansweredError).
func (o *outage) dialed(address string, err error) {
	if err == nil {
		return
	}
	o.log.Debug("cannot reach ZooKeeper", "server", address, "err", err)
	cause := "cannot dial " + address + ": " + err.Error()
	if unanswered := (*wire.UnansweredError)(nil); errors.As(err, &unanswered) {
		cause = err.Error() // it says the server and that it connected
	}
	o.begins(cause, 0)
	o.mu.Lock()
	o.dials++
	o.dialErr = err
	o.mu.Unlock()
}

// holdsEnded counts holds ended during an outage under way.
func (o *outage) holdsEnded(n int) {
	if n == 0 {
		return
	}
	o.mu.Lock()
	if !o.since.IsZero() {
		o.holds += n
	}
	o.mu.Unlock()
}

// stallEnded counts n holds that a lapse of the lease ended as this process
// resumed from stall. A stall longer than the session ends both the lease
// and the connection, and the process, resumed, may notice either first: a
// job's question about its hold judges the lease at once (Member.Vouch),
// while the connection is found gone a moment later. So the stall's outage,
// under way or beginning after, counts the lapse's holds among the ones it
// ended: told "holds_ended=0", a stall that cost every hold read as no harm
// done.
func (o *outage) stallEnded(stall mono.Stall, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.since.IsZero() {
		if o.stalled && o.stall.From.Equal(stall.From) {
			o.holds += n
		}
		return
	}
	if !o.lapsedIn.From.Equal(stall.From) {
		o.lapsedIn, o.lapsed = stall, 0
	}
	o.lapsed += n
}

// tell tells the outage's lines for the state zs that observe applied, in
// session id (prev: the session before; 0 for the first), having ended
// holds.
func (o *outage) tell(zs zk.State, prev, id int64, holds int) {
	switch zs {
	case zk.StateHasSession:
		if prev != 0 && prev != id {
			// A polled state (NewSession) can miss the disconnection.
			o.begins("session expired", 0)
		}
		o.holdsEnded(holds)
		o.ends("connected", prev, id)
	case zk.StateExpired:
		o.begins("session expired", holds)
	default:
		o.begins("connection lost", holds)
	}
}

// ends ends the outage under way, if any: the session has a connection
// again (end is "connected", in session id; prev is the one before, 0 when
// this is the first) or was closed.
func (o *outage) ends(end string, prev, id int64) {
	o.mu.Lock()
	if o.since.IsZero() {
		o.mu.Unlock()
		return
	}
	d, cause, holds, dials, dialErr := mono.Now().Std().Sub(o.since), o.cause, o.holds, o.dials, o.dialErr
	stall, stalled := o.stall, o.stalled
	o.since, o.stalled = time.Time{}, false
	o.mu.Unlock()
	if stalled {
		d = mono.Now().Std().Sub(stall.From) // from the stall's start: the connection went with it
	}
	if end != "connected" && o.unanswered != nil {
		// The last dial connected, and its server is silent still: that,
		// not an earlier dial's failure, is where the session stands.
		if err := o.unanswered(); err != nil {
			dialErr = err
		}
	}
	attrs := []any{"after", d.Round(time.Millisecond), "cause", cause, "holds_ended", holds, "failed_dials", dials}
	if stalled {
		attrs = append(attrs, "stalled_for", roundStall(stall))
	}
	if dialErr != nil {
		attrs = append(attrs, "last_dial_error", dialErr.Error())
	}
	switch {
	case end != "connected":
		o.log.Warn("no connection to ZooKeeper until "+end, attrs...)
	case prev == 0:
		attrs = append(attrs, "session", fmt.Sprintf("0x%x", id))
		o.log.Warn("connected to ZooKeeper: session established", attrs...)
	case prev != id:
		attrs = append(attrs, "session", fmt.Sprintf("0x%x", id))
		o.log.Warn("connected to ZooKeeper again, in a new session: the old one expired, and its nodes with it", attrs...)
	default:
		attrs = append(attrs, "session", fmt.Sprintf("0x%x", id))
		o.log.Warn("connected to ZooKeeper again, in the same session", attrs...)
	}
}
