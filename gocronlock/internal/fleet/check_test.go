package fleet

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sample is a few records: two jobs, ticks 1 and 2, one duplicate, one
// line cut short by a kill.
const sample = `ready node-0 1000
run job-00 1 node-0 2000
run job-00 2 node-0 3000
run job-00 2 node-1 3150
run job-01 1 node-1 2150
leader node-1 4000 true
run job-01 2 nod`

func TestParse(t *testing.T) {
	var rs Records
	if err := rs.Parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	if len(rs.Runs) != 4 || len(rs.Leaders) != 1 || rs.Ready["node-0"] != time.UnixMicro(1000) {
		t.Fatalf("parsed %d runs, %d leaderships, ready %v", len(rs.Runs), len(rs.Leaders), rs.Ready)
	}
	if err := rs.Parse(strings.NewReader("run job-00 x node-0 1")); err == nil {
		t.Error("a bad tick parsed")
	}
}

func TestCheck(t *testing.T) {
	var rs Records
	if err := rs.Parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	rep := Check(rs.Runs, 2, 1, 2, nil)
	if rep.Expected != 4 || rep.Covered != 3 || rep.Runs != 4 || len(rep.Duplicates) != 1 ||
		rep.Duplicates[Key{"job-00", 2}] != 2 || rep.PerNode["node-1"] != 2 {
		t.Errorf("report %+v", rep)
	}
	if got := rep.RunsPerTick(); got < 1.33 || got > 1.34 {
		t.Errorf("runs per tick %v, want 4/3", got)
	}
	skipped := Check(rs.Runs, 2, 1, 2, func(tick int64) bool { return tick == 2 })
	if skipped.Expected != 2 || skipped.Covered != 2 || len(skipped.Duplicates) != 1 {
		t.Errorf("with tick 2 left out: %+v", skipped)
	}
}

func TestTickOf(t *testing.T) {
	first := time.Unix(100, 0)
	for _, c := range []struct {
		at   time.Duration
		want int64
	}{{0, 0}, {3 * time.Millisecond, 0}, {time.Second + 40*time.Millisecond, 1}, {5*time.Second - time.Millisecond, 5}} {
		if got := tickOf(first.Add(c.at), first, time.Second); got != c.want {
			t.Errorf("tickOf(+%v) = %d, want %d", c.at, got, c.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	var errs strings.Builder
	if _, err := parse([]string{"-mode", "other"}, &errs); err == nil {
		t.Error("-mode other accepted")
	}
	if _, err := parse([]string{"-work-min", "2ms", "-work-max", "1ms"}, &errs); err == nil {
		t.Error("work-max below work-min accepted")
	}
	c, err := parse([]string{"-offset", "150ms"}, &errs)
	if err != nil || c.offset != 150*time.Millisecond || c.start.IsZero() {
		t.Errorf("parse: %+v, %v", c, err)
	}
}
