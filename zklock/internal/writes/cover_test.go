package writes_test

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/tierlock/tierlock/zklock/internal/writes"
)

// Coverage: the explorer's checks are not vacuous only where schedules
// reach the moments they are about. TestExplore counts these moments over
// its schedules and fails if one was never reached (as model_test.go
// requires writes.pml's cover: printfs to be).
type point int

const (
	coverRefusedOther point = iota // a multi refused at another write's op
	coverRefusedOwn                // a write told it was refused at its own op
	coverApart                     // a round of writes apart (more than one request)
	coverApartCap                  // a round of writes apart at MaxApart requests
	coverTakenQueued               // given up while queued: taken back
	coverAbandoned                 // given up once sealed: left to the writer
	coverOver                      // given up after it ended
	coverWireUnknown               // told unknown once its request was on the wire
	coverWireSettled               // waited for the wire, and told its real outcome
	coverReadBack                  // a caller read back an unknown outcome
	coverDropApplied               // a drop whose request the server applied first
	coverDropLost                  // a drop whose request the server never applied
	coverNewSession                // a new session (expiry)
	coverOwnerUnknown              // a create applied as the session changed
	coverFoundOwn                  // protection mode found its node
	coverCreatedAgain              // protection mode created again
	coverHandedOver                // a delete refused by an ACL, handed over
	coverOrphan                    // the writer deleted what an abandoned create made
	coverSweep                     // a create's sweep for its GUID
	coverClosedWrite               // a write ended by the Session's close
	coverTimerStart                // the timer started the writer (lone deletes)
	coverParent                    // parents made after NoNode
	coverOneWrite                  // a schedule of one write per request
	coverTooLarge                  // a write too large alone, told so unsent
	coverBigRequest                // a request of several writes over half MaxBytes
	coverSessionZero               // SessionID 0 (the expiry learnt) to the write path
	coverNoTapGiveUp               // no tap: a caller who gave up waited for the answer
	coverGoneAnswered              // a delete refused in the next session: its node went with its session
	nPoints
)

var pointNames = [nPoints]string{"refused at another's op", "refused at its own op", "round apart", "round apart at its cap",
	"given up queued", "given up once sealed", "given up once over",
	"told unknown once on the wire", "told its outcome once on the wire", "read back", "drop: applied first",
	"drop: never applied", "new session", "create answered as the session changed", "protection found its node",
	"protection created again", "delete handed over", "orphan deleted by the writer", "sweep", "write ended by Close",
	"writer started by its timer", "parents made", "one write per request", "too large alone",
	"request over half MaxBytes", "SessionID 0", "no tap: a give-up waited for the answer",
	"delete refused in the next session"}

var coverage [nPoints]atomic.Int64

func (w *world) cover(p point) { coverage[p].Add(1) }

// uncovered lists the points no schedule reached, and the counts.
func uncovered() (missing []string, counts string) {
	var b strings.Builder
	for p := range nPoints {
		n := coverage[p].Load()
		fmt.Fprintf(&b, "%s %d; ", pointNames[p], n)
		if n == 0 {
			missing = append(missing, pointNames[p])
		}
	}
	return missing, b.String()
}

// coverFate counts what GiveUp made of a write.
func (w *world) coverFate(f writes.Fate) {
	switch {
	case f == writes.TakenBack:
		w.cover(coverTakenQueued)
	case f == writes.Abandoned:
		w.cover(coverAbandoned)
	default:
		w.cover(coverOver)
	}
}

// coverTold counts what GiveUpTold said.
func (w *world) coverTold(r writes.Result, onWire <-chan struct{}) {
	switch {
	case onWire != nil:
		w.cover(coverAbandoned)
	case r.Verdict == writes.Withdrawn:
		w.cover(coverTakenQueued)
	default:
		w.cover(coverOver)
	}
}
