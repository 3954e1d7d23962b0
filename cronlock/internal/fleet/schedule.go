package fleet

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// Job is one of an instance's jobs: its name (its lock's key, the same on
// every instance) and its spec.
type Job struct {
	Name string
	Spec string
}

// specParser parses a spec as cron.New(cron.WithSeconds()) does: six
// fields, the first the seconds, or a descriptor such as "@every 1s".
var specParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// lookback bounds how far back TickOf looks for a tick: a spec's ticks
// must be closer than this (ParseSpec checks it). Two minutes: a job once a
// minute is a fleet's too (TestFleetMinuteTicks).
const lookback = 2 * time.Minute

// leeway is how early a timer may fire and still be its tick's: a Go
// timer does not fire early, but robfig/cron sets its timers by the wall
// clock, which an NTP slew moves by a few milliseconds at most. It is
// small so that a timer fired most of a period late (a stalled process)
// is still named by its own tick.
const leeway = 10 * time.Millisecond

// ParseSpec parses spec as the fleet's schedulers do, and refuses a spec
// whose ticks are not the same on every instance, where counting runs per
// tick would mean nothing: "@every" longer than a second (robfig/cron
// counts it from each scheduler's start), or ticks a lookback or more
// apart.
func ParseSpec(spec string) (cron.Schedule, error) {
	s, err := specParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("fleet: spec %q: %w", spec, err)
	}
	if d, ok := s.(cron.ConstantDelaySchedule); ok && d.Delay != time.Second {
		return nil, fmt.Errorf("fleet: spec %q: @every %v ticks from each scheduler's start, not on the fleet's common ticks", spec, d.Delay)
	}
	t := s.Next(time.Unix(0, 0).UTC())
	for range 3 {
		n := s.Next(t)
		if n.IsZero() || n.Sub(t) >= lookback {
			return nil, fmt.Errorf("fleet: spec %q: ticks %v apart, want under %v", spec, n.Sub(t), lookback)
		}
		t = n
	}
	return s, nil
}

// shiftedParser parses specs with ParseSpec and delays every time their
// schedules return by offset: an instance whose timers fire offset after
// the fleet's ticks.
type shiftedParser struct{ offset time.Duration }

// Parse implements cron.ScheduleParser.
func (p shiftedParser) Parse(spec string) (cron.Schedule, error) {
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return shifted{s: s, offset: p.offset}, nil
}

// shifted is a schedule whose times are s's, offset later.
type shifted struct {
	s      cron.Schedule
	offset time.Duration
}

// Next implements cron.Schedule: s's next tick after t less the offset,
// fired offset after it.
func (s shifted) Next(t time.Time) time.Time {
	n := s.s.Next(t.Add(-s.offset))
	if n.IsZero() {
		return n
	}
	return n.Add(s.offset)
}

// TickOf returns the tick of s that a timer fired at at (less the
// instance's offset) serves: s's last time at or before at, within the
// leeway. The zero time if s has none within lookback.
func TickOf(s cron.Schedule, at time.Time) time.Time {
	limit := at.UTC().Add(leeway) // UTC: the location the workers' schedulers run in; no monotonic reading
	tick := s.Next(limit.Add(-lookback))
	if tick.IsZero() || tick.After(limit) {
		return time.Time{}
	}
	for {
		n := s.Next(tick)
		if n.IsZero() || n.After(limit) {
			return tick
		}
		tick = n
	}
}

// Ticks returns s's times from from (included) to to (excluded).
func Ticks(s cron.Schedule, from, to time.Time) []time.Time {
	var ts []time.Time
	for t := s.Next(from.UTC().Add(-time.Nanosecond)); !t.IsZero() && t.Before(to); t = s.Next(t) {
		ts = append(ts, t)
	}
	return ts
}
