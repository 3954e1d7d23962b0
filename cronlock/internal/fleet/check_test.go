package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// base is a whole, even second: tick 0 of every spec below.
var base = time.Unix(1_800_000_000, 0).UTC()

func mustParse(t *testing.T, spec string) cron.Schedule {
	t.Helper()
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEverySubSecond: robfig/cron v3 rounds an @every under a second up to
// a second (constantdelay.go), so "@every 500ms" ticks every second, as
// docs/cron.md says.
func TestEverySubSecond(t *testing.T) {
	s := mustParse(t, "@every 500ms")
	if d, ok := s.(cron.ConstantDelaySchedule); !ok || d.Delay != time.Second {
		t.Fatalf("@every 500ms parsed to %#v", s)
	}
	if n := s.Next(base.Add(100 * time.Millisecond)); !n.Equal(base.Add(time.Second)) {
		t.Errorf("next after +100ms: %v, want +1s", n.Sub(base))
	}
}

func TestParseSpecRefuses(t *testing.T) {
	for _, spec := range []string{"@every 2s", "0 0 * * * *", "* * * * *", "nonsense"} {
		if _, err := ParseSpec(spec); err == nil {
			t.Errorf("%q accepted", spec)
		}
	}
}

func TestTickOf(t *testing.T) {
	two := mustParse(t, "*/2 * * * * *")
	one := mustParse(t, "@every 1s")
	for _, c := range []struct {
		s    cron.Schedule
		at   time.Duration
		want time.Duration
	}{
		{two, 0, 0}, {two, 1500 * time.Millisecond, 0}, {two, 1995 * time.Millisecond, 2 * time.Second},
		{two, -5 * time.Millisecond, 0}, {two, -20 * time.Millisecond, -2 * time.Second},
		{one, 0, 0}, {one, 989 * time.Millisecond, 0}, {one, 995 * time.Millisecond, time.Second}, {one, 3 * time.Second, 3 * time.Second},
	} {
		if got := TickOf(c.s, base.Add(c.at)); !got.Equal(base.Add(c.want)) {
			t.Errorf("TickOf(+%v) = %v, want %v", c.at, got.Sub(base), c.want)
		}
	}
}

// TestShifted: an instance's timers fire its offset after the fleet's
// ticks, and TickOf names each fire by its tick.
func TestShifted(t *testing.T) {
	const off = 150 * time.Millisecond
	for _, spec := range []string{"@every 1s", "*/2 * * * * *"} {
		s, err := shiftedParser{offset: off}.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		plain := mustParse(t, spec)
		now := base.Add(-time.Millisecond)
		for range 5 {
			fire := s.Next(now)
			tick := plain.Next(now.Add(-off))
			if !fire.Equal(tick.Add(off)) {
				t.Errorf("%s: fire %v, tick %v", spec, fire.Sub(base), tick.Sub(base))
			}
			if got := TickOf(plain, fire.Add(-off)); !got.Equal(tick) {
				t.Errorf("%s: fire %v named by %v, want %v", spec, fire.Sub(base), got.Sub(base), tick.Sub(base))
			}
			now = fire
		}
	}
}

// record writes a run record of job on instance for the tick at offset
// tick from base, fired 10 ms after it.
func record(job, instance string, tick time.Duration) string {
	at := base.Add(tick)
	return fmt.Sprintf("fire %s %s %d %d\nrun %s %s %d %d %d %d\n", job, instance, at.UnixMicro(), at.Add(10*time.Millisecond).UnixMicro(),
		job, instance, at.UnixMicro(), at.Add(10*time.Millisecond).UnixMicro(), at.Add(30*time.Millisecond).UnixMicro(), at.Add(40*time.Millisecond).UnixMicro())
}

func TestCheck(t *testing.T) {
	jobs := []Job{{"a", "@every 1s"}, {"b", "*/2 * * * * *"}}
	// From +0 to +6s: a's ticks +0 ... +5 (counted +1 ... +4), b's +0, +2,
	// +4 (counted +2).
	s := "ready n0 1\n" + record("a", "n0", 0) + // not counted: the first tick
		record("a", "n0", time.Second) +
		record("a", "n0", 2*time.Second) + record("a", "n1", 2*time.Second) +
		record("a", "n0", 3*time.Second) + record("a", "n1", 3*time.Second) + record("a", "n2", 3*time.Second) +
		record("b", "n1", 2*time.Second) + "overlap b n1 5\n"
	var rs Records
	if err := rs.Parse(strings.NewReader(s)); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(jobs, rs, base, base.Add(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Ticks: 5, Once: 2, Twice: 1, More: 1, Missed: 1, Runs: 7}
	if rep.Counts != want || rep.Fires != 7 || rep.Overlaps != 1 || rep.PerInstance["n1"] != 3 || len(rep.Repeats) != 2 {
		t.Errorf("report %+v, want counts %+v, 7 fires, 1 overlap, 3 runs on n1, 2 repeats", rep, want)
	}
	if a := rep.BySpec["@every 1s"]; a.Ticks != 4 || a.Missed != 1 {
		t.Errorf("@every 1s: %+v", a)
	}
	if rep.Wait[2] != 20*time.Millisecond {
		t.Errorf("fire to run: %v", rep.Wait)
	}
	if got := rep.String(); !strings.Contains(got, "1 missed") || !strings.Contains(got, `"*/2 * * * * *": 1 ticks`) {
		t.Errorf("report reads %q", got)
	}
	// A run named by a time that is not one of its job's ticks.
	if err := rs.Parse(strings.NewReader(record("b", "n0", 3*time.Second))); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(jobs, rs, base, base.Add(6*time.Second)); err == nil {
		t.Error("a run of b at an odd second was placed")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, line := range []string{"run a n0 1 2 3", "fire a n0 x 1", "hello", "ready n0"} {
		var rs Records
		if err := rs.Parse(strings.NewReader(line)); err == nil {
			t.Errorf("%q parsed", line)
		}
	}
}

func TestParseFlags(t *testing.T) {
	var errs strings.Builder
	for _, args := range [][]string{
		{"-job", "a=@every 1s", "-lock", "nosuch"},
		{"-lock", "none"},
		{"-job", "a b=@every 1s"},
		{"-job", "a=@every 1s", "-work-min", "2ms", "-work-max", "1ms"},
	} {
		if _, err := parse(args, &errs); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	c, err := parse([]string{"-job", "a=*/2 * * * * *", "-offset", "150ms", "-servers", "x:1,y:2"}, &errs)
	if err != nil || c.offset != 150*time.Millisecond || c.start.IsZero() || len(c.servers) != 2 || c.jobs[0].Spec != "*/2 * * * * *" {
		t.Errorf("parse: %+v, %v", c, err)
	}
}

func TestRegister(t *testing.T) {
	if got := strings.Join(Variants(), ","); !strings.Contains(got, "none,redsync,redsync-try") {
		t.Errorf("registered: %s", got)
	}
	for name, v := range map[string]Variant{"none": {Expect: Repeats, Open: registryOpen(t, "none")}, "no-open": {Expect: Repeats}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			Register(name, v)
		}()
	}
}

func registryOpen(t *testing.T, name string) Factory {
	v, ok := Lookup(name)
	if !ok {
		t.Fatalf("%s not registered", name)
	}
	return v.Open
}
