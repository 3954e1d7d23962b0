package runonce

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/tierlock/tierlock/internal/hostclock"
	"github.com/tierlock/tierlock/internal/runrec"
)

// A job's lists of ticks to decide by its record, kept under its run
// state (run.go): the named ticks of ended held episodes (heldTicks,
// decided by heldticks.go), and the ticks its scheduler did not fire here
// (missedTicks, decided and told by missed.go).

// maxHeldTicks bounds the named ticks an episode keeps undecided; an older
// one dropped counts as lost.
const maxHeldTicks = 4 * runrec.MaxRecent

// heldTicks is a job's ticks of ended episodes still undecided, under the
// job's busy flag.
type heldTicks struct {
	ticks    []int64
	ranAfter int // of the ticks since the last line, run after
	lost     int // of the ticks since the last line, let go
}

// add keeps ticks, an ended episode's undecided ones.
func (h *heldTicks) add(ticks []int64) {
	h.ticks = append(h.ticks, ticks...)
	if over := len(h.ticks) - maxHeldTicks; over > 0 {
		h.ticks, h.lost = h.ticks[over:], h.lost+over // the oldest dropped: counted lost
	}
}

// forget drops tick, lost again in a new episode, which counts it.
func (h *heldTicks) forget(tick int64) {
	h.ticks = slices.DeleteFunc(h.ticks, func(t int64) bool { return t == tick })
}

// takeBack removes from *ticks those last shows run and returns how many.
func takeBack(ticks *[]int64, last runrec.Last, w int64) int {
	n := len(*ticks)
	*ticks = slices.DeleteFunc(*ticks, func(tick int64) bool { return last.RanTick(tick, w) })
	return n - len(*ticks)
}

// maxMissed bounds the ticks a job keeps undecided, and those told lost
// it still takes back; the oldest undecided dropped are told unknown.
const maxMissed = 4 * runrec.MaxRecent

// missedTick is a tick handed to Missed: its name (ms, as ClaimTick names
// it) and why it was not fired.
type missedTick struct {
	name int64
	why  string
}

// missedTicks is a job's ticks handed to Missed and not decided yet, and
// those told lost, which a later read may show run.
type missedTicks struct {
	mu      sync.Mutex
	pending []missedTick // ascending by name
	told    []int64      // told lost, still open in the record
	dropped int          // pending dropped past maxMissed, not told yet
}

func (m *missedTicks) add(ticks []time.Time, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range ticks {
		if t.IsZero() {
			continue
		}
		name := t.Add(hostclock.Offset()).UnixMilli()
		i, found := slices.BinarySearchFunc(m.pending, name, func(e missedTick, n int64) int { return cmp.Compare(e.name, n) })
		if !found && !slices.Contains(m.told, name) {
			m.pending = slices.Insert(m.pending, i, missedTick{name: name, why: why})
		}
	}
	if over := len(m.pending) - maxMissed; over > 0 {
		m.pending, m.dropped = m.pending[over:], m.dropped+over
	}
}

// missedVerdict is what a read decided of a job's missed ticks.
type missedVerdict struct {
	ran     int            // shown run elsewhere
	lost    []missedTick   // open: told lost
	unknown []missedTick   // let go: the record cannot say
	after   []int64        // told lost before, shown run now
	dropped int            // dropped past maxMissed: the record not asked
	waiting int            // not due yet (at Close: left untold)
	unread  bool           // the record could not be read (Close): every tick unknown
	whys    map[string]int // the lost ticks' reasons
}

// decide decides the ticks due at now (their window w and the lock
// timeout past) by last, a read of the job's record.
func (m *missedTicks) decide(last runrec.Last, w, due int64, now time.Time) missedVerdict {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := missedVerdict{dropped: m.dropped, whys: map[string]int{}}
	m.dropped = 0
	m.told = slices.DeleteFunc(m.told, func(name int64) bool {
		if last.RanTick(name, w) {
			v.after = append(v.after, name)
			return true
		}
		return !last.Open(name, w) // let go: final
	})
	names := len(last.Ticks) > 0 || last.Runs == 0
	m.pending = slices.DeleteFunc(m.pending, func(t missedTick) bool {
		switch {
		case now.UnixMilli() < t.name+due:
			v.waiting++
			return false
		case last.RanTick(t.name, w):
			v.ran++
		case names && last.Open(t.name, w):
			v.lost = append(v.lost, t)
			v.whys[t.why]++
			m.told = append(m.told, t.name)
		default:
			v.unknown = append(v.unknown, t)
		}
		return true
	})
	if over := len(m.told) - maxMissed; over > 0 {
		m.told = m.told[over:]
	}
	return v
}

// undecidable gives up the ticks pending: all unknown (the record could
// not be read at Close).
func (m *missedTicks) undecidable() missedVerdict {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := missedVerdict{unknown: m.pending, dropped: m.dropped, whys: map[string]int{}, unread: true}
	m.pending, m.dropped = nil, 0
	return v
}
