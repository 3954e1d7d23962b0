package cells

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPresets(t *testing.T) {
	full, err := Preset("full")
	if err != nil {
		t.Fatal(err)
	}
	if err := full.Check(); err != nil {
		t.Fatal(err)
	}
	cs := full.Cells()
	if len(cs) != 144 {
		t.Fatalf("full: %d cells, want 144", len(cs))
	}
	keys := map[string]bool{}
	for _, c := range cs {
		if keys[c.Key()] {
			t.Fatalf("two cells with key %s", c.Key())
		}
		keys[c.Key()] = true
	}
	// The axes, on both kinds of servers.
	// Steady cells: 20s measured after a 5s warm-up.
	if full.Duration < 20*time.Second || full.RunWarmup != 5*time.Second || full.Probe <= 0 {
		t.Errorf("full runs %v after %v, probe %v", full.Duration, full.RunWarmup, full.Probe)
	}
	if !slices.Equal(full.Procs, []int{1, 4, 8}) || !slices.Equal(full.Goroutines, []int{1, 8, 64, 1000}) ||
		!slices.Equal(full.Paths, []int{1, 16, 1000}) || !slices.Equal(full.Holds, []time.Duration{0, time.Millisecond}) ||
		!slices.Equal(full.Topologies, []Topology{Standalone, Ensemble}) {
		t.Errorf("full axes: %+v", full)
	}
	quick, _ := Preset("quick")
	if !slices.ContainsFunc(quick.Cells(), func(c Cell) bool { return c.Procs == 2 && c.Goroutines == 8 }) {
		t.Error("quick lacks the 2 x 8 cell")
	}
	// A preset is a copy: changing it leaves the next one alone.
	quick.Procs[0] = 99
	if again, _ := Preset("quick"); again.Procs[0] == 99 {
		t.Error("Preset hands out its own slices")
	}
	if _, err := Preset("huge"); !errors.Is(err, ErrSpec) {
		t.Errorf("unknown preset: %v", err)
	}
}

// Repetitions come after every point of a topology has run once, so a
// matrix cut short has the whole picture once rather than half of it
// twice; a point's repetitions share its Point name.
func TestCellsOrder(t *testing.T) {
	s := Spec{Topologies: []Topology{Standalone, Ensemble}, Procs: []int{1, 2}, Goroutines: []int{8}, Paths: []int{1},
		Holds: []time.Duration{0}, Duration: time.Second, Repeat: 2}
	var got []string
	for _, c := range s.Cells() {
		got = append(got, fmt.Sprintf("%s %d r%d", c.Topology, c.Procs, c.Rep))
	}
	want := []string{"standalone 1 r0", "standalone 2 r0", "standalone 1 r1", "standalone 2 r1",
		"ensemble 1 r0", "ensemble 2 r0", "ensemble 1 r1", "ensemble 2 r1"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %q, want %q", got, want)
	}
	cs := s.Cells()
	if cs[0].Point() != cs[2].Point() || cs[0].Key() == cs[2].Key() || cs[0].Point() == cs[1].Point() {
		t.Errorf("points %q %q %q", cs[0].Point(), cs[1].Point(), cs[2].Point())
	}
	if got := s.Estimate(3, 2*time.Second, 10*time.Second); got != 8*3*3*time.Second+2*10*time.Second {
		t.Errorf("estimate %v", got)
	}
	// Each run is its warm-up, its window, its probes (2.25 probe
	// lengths) and the overhead.
	s.RunWarmup, s.Probe = 5*time.Second, 4*time.Second
	if got := s.Estimate(3, 2*time.Second, 10*time.Second); got != 8*3*(5+1+9+2)*time.Second+2*10*time.Second {
		t.Errorf("estimate with warm-up and probe %v", got)
	}
}

func TestParseAxes(t *testing.T) {
	if v, err := Ints("-x", " 1,4 ,1,8"); err != nil || !slices.Equal(v, []int{1, 4, 8}) {
		t.Errorf("Ints: %v, %v", v, err)
	}
	if v, err := Durations("-x", "0, 1ms,0s"); err != nil || !slices.Equal(v, []time.Duration{0, time.Millisecond}) {
		t.Errorf("Durations: %v, %v", v, err)
	}
	if v, err := Topologies("ensemble,standalone"); err != nil || !slices.Equal(v, []Topology{Ensemble, Standalone}) {
		t.Errorf("Topologies: %v, %v", v, err)
	}
	for _, bad := range []func() error{
		func() error { _, err := Ints("-x", ""); return err },
		func() error { _, err := Ints("-x", "0"); return err },
		func() error { _, err := Ints("-x", "-2"); return err },
		func() error { _, err := Ints("-x", "1,x"); return err },
		func() error { _, err := Durations("-x", "-1ms"); return err },
		func() error { _, err := Durations("-x", "1"); return err },
		func() error { _, err := Topologies("external"); return err },
		func() error { return Spec{}.Check() },
		func() error {
			s, _ := Preset("quick")
			s.Repeat = 0
			return s.Check()
		},
		func() error {
			s, _ := Preset("quick")
			s.Duration = 0
			return s.Check()
		},
		func() error {
			s, _ := Preset("quick")
			s.Warmup = -time.Second
			return s.Check()
		},
	} {
		if err := bad(); !errors.Is(err, ErrSpec) {
			t.Errorf("bad input accepted or unmarked: %v", err)
		}
	}
}
