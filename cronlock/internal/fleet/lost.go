package fleet

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Told is what the instances' observers said of the ticks that ran
// nowhere (a lock with an observer: tierlock's): a lost tick must be
// observed as lost (held, failed, lost), never as already_ran or stale,
// which would say it ran.
type Told struct {
	Lost       int            // (job, tick) that ran nowhere
	ByOutcome  map[string]int // of those, how many each outcome was observed for
	AlreadyRan []Key          // of those, the ones an instance observed as already_ran
	Unobserved []Key          // of those, the ones no instance observed
	Held       []Key          // of those, the ones an instance observed as held
	Stale      []Key          // of those, the ones an instance observed as stale (which says the fleet ran it)
}

// TellsLost sorts the lost ticks of rep by what obs said of them.
func TellsLost(rep Report, obs []Obs) Told {
	said := map[Key]map[string]bool{}
	for _, o := range obs {
		k := Key{o.Job, o.Tick.UTC()}
		if said[k] == nil {
			said[k] = map[string]bool{}
		}
		said[k][o.Outcome] = true
	}
	t := Told{Lost: len(rep.Lost), ByOutcome: map[string]int{}}
	for _, k := range rep.Lost {
		outcomes := said[k]
		if len(outcomes) == 0 {
			t.Unobserved = append(t.Unobserved, k)
		}
		if outcomes["already_ran"] {
			t.AlreadyRan = append(t.AlreadyRan, k)
		}
		if outcomes["held"] {
			t.Held = append(t.Held, k)
		}
		if outcomes["stale"] {
			t.Stale = append(t.Stale, k)
		}
		for o := range outcomes {
			t.ByOutcome[o]++
		}
	}
	return t
}

func (t Told) String() string {
	var by []string
	for _, o := range slices.Sorted(maps.Keys(t.ByOutcome)) {
		by = append(by, fmt.Sprintf("%s=%d", o, t.ByOutcome[o]))
	}
	return fmt.Sprintf("%d ticks ran nowhere, observed as: %s; observed as already_ran: %d, as stale: %d; observed by no instance: %d",
		t.Lost, strings.Join(by, " "), len(t.AlreadyRan), len(t.Stale), len(t.Unobserved))
}
