package fault

import (
	"fmt"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// closeLocks has one worker close its locks and make new ones on the same
// paths, proto.CloseRounds times, while its goroutines acquire them: a
// grant that races its lock's Close must come back as ErrClosed (the
// worker acquires again on the new lock), never as a hold that nobody
// cancels while its node is gone, which the checker would see as an
// overlap with the next holder. The worker must go on acquiring.
// Implementations that cannot (not tierlock's, or a multi-lock) say so,
// and the event is only a pause.
func (fr *injector) closeLocks(ev *Event) {
	slot, proc := fr.pick()
	ev.Target = fr.workerTarget(slot, proc)
	ev.affected, ev.target = []int{proc}, proc
	fr.drainEvents()
	ev.start = exclusion.Now()
	fr.f.Get(proc).Send(proto.CloseLocks)
	m := fr.waitEvent(proc, proto.Reopened, 10*time.Second)
	ev.healed = exclusion.Now()
	ev.ref = ev.healed
	switch {
	case m == nil:
		ev.Failure = "the worker did not finish closing and remaking its locks within 10s"
	case m.N == 0 && m.Err != "":
		ev.Variant = "not supported: " + m.Err
	case m.Err != "":
		ev.Failure = fmt.Sprintf("remaking the locks failed after %d rounds: %s", m.N, m.Err)
	default:
		ev.Variant = fmt.Sprintf("locks closed and made anew %d times while acquiring", m.N)
	}
}
