package fleet

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
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
	// Untold: of those, the ones no instance observed as lost, held (its
	// lock held) or failed (ZooKeeper silent, an overload); unknown says
	// the fleet may have run the tick, which a tick that ran nowhere did
	// not.
	Untold []Key
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
		if !outcomes["held"] && !outcomes["failed"] {
			t.Untold = append(t.Untold, k)
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

// ToldLostRan returns the (job, tick) of in (WindowKeys) that ran on an
// instance, which obs told lost or held (the tick ran, yet an instance
// said it was lost), in the order first told.
func ToldLostRan(rs Records, obs []Obs, in map[Key]bool) []Key {
	ran := map[Key]bool{}
	for _, r := range rs.Runs {
		ran[Key{r.Job, r.Tick.UTC()}] = true
	}
	seen := map[Key]bool{}
	var keys []Key
	for _, o := range obs {
		k := Key{o.Job, o.Tick.UTC()}
		if (o.Outcome == "lost" || o.Outcome == "held") && ran[k] && in[k] && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// WindowKeys returns the (job, tick) that Check counts from from to to:
// each job's ticks there but its first and its last (the fleet starting
// and stopping).
func WindowKeys(jobs []Job, from, to time.Time) (map[Key]bool, error) {
	in := map[Key]bool{}
	for _, j := range jobs {
		s, err := ParseSpec(j.Spec)
		if err != nil {
			return nil, err
		}
		ts := Ticks(s, from, to)
		for i := 1; i < len(ts)-1; i++ {
			in[Key{j.Name, ts[i]}] = true
		}
	}
	return in, nil
}

// ObsExcept returns the observations of obs but instance's ("": all).
func ObsExcept(obs []Obs, instance string) []Obs {
	return slices.DeleteFunc(slices.Clone(obs), func(o Obs) bool { return o.Instance == instance })
}

// ObsOf returns instance's observations of obs.
func ObsOf(obs []Obs, instance string) []Obs {
	return slices.DeleteFunc(slices.Clone(obs), func(o Obs) bool { return o.Instance != instance })
}
