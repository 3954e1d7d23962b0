package fault

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tierlock/tierlock/internal/exclusion"
)

// MeasureRecovery computes the recovery times of events from the checked
// holds of their run, which started at start (shared clock), and decides,
// from them, whether each fault was recovered from.
func MeasureRecovery(events []*Event, holds []exclusion.Hold, start int64, session time.Duration) {
	if len(events) == 0 {
		return
	}
	var all []int64
	per := map[int][]int64{}
	for _, h := range holds {
		all = append(all, h.Enter)
		per[int(h.Proc)] = append(per[int(h.Proc)], h.Enter)
	}
	slices.Sort(all)
	for _, s := range per {
		slices.Sort(s)
	}
	// next is the first time in sorted s after t, or -1.
	next := func(s []int64, t int64) int64 {
		i := sort.Search(len(s), func(i int) bool { return s[i] > t })
		if i == len(s) {
			return -1
		}
		return s[i]
	}
	sec := func(d int64) float64 { return float64(d) / 1e9 }
	limit := session + RecoveryBound
	for _, ev := range events {
		ev.RecoveryAnySec, ev.RecoveryOwnSec = -1, -1
		if ev.start == 0 {
			ev.Recovered = false
			continue // never injected
		}
		ev.AtSec = sec(ev.start - start)
		if ev.healed != 0 {
			ev.HealedSec = sec(ev.healed - ev.start)
		}
		if t := next(all, ev.start); t >= 0 {
			ev.RecoveryAnySec = sec(t - ev.start)
		}
		own, ok := ownRecovery(ev, per, next)
		if ok {
			ev.RecoveryOwnSec = sec(own - ev.start)
		}
		ev.Recovered = ok && time.Duration(own-ev.ref) <= limit
		if !ev.Recovered && ev.Failure == "" {
			ev.Failure = fmt.Sprintf("not recovered: the worker(s) it hit did not acquire within %v of its healing", limit)
		}
	}
}

// ownRecovery is when the last of the workers ev hit acquired again after
// ev.ref, or false when one has not (or ev hit none).
func ownRecovery(ev *Event, per map[int][]int64, next func([]int64, int64) int64) (int64, bool) {
	if len(ev.affected) == 0 || ev.ref == 0 {
		return 0, false
	}
	var own int64
	for _, p := range ev.affected {
		t := next(per[p], ev.ref)
		if t < 0 {
			return 0, false
		}
		own = max(own, t)
	}
	return own, true
}
