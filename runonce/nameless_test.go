package runonce_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestNamelessRunKeepsItsTick: a run claimed without a tick's name keeps
// a later named fire of its tick from running, on a 1-s job whose next
// tick ran between the two: the nameless run is a Claim without a tick
// (a Cron not attached, gocron's RunNow), or the write of an instance of
// the format before tick names, which drops them. On the code before,
// the nameless run left no name, and the tick's named fire 1.1 s late ran
// it again (the ninth review of the fleet, item 1). Now it is unknown:
// the nameless run may have been its run, and the record cannot tell. An
// older writer is told once, naming it.
func TestNamelessRunKeepsItsTick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of a 1-s job, about 10 s")
	}
	for _, c := range []struct {
		name     string
		nameless func(t *testing.T, b *runonce.Runner, runPath string)
		want     error
	}{
		{"claim", func(t *testing.T, b *runonce.Runner, _ string) {
			if ran, err := runOnce(zktest.Context(t, 5*time.Second), b, "job", nil); !ran {
				t.Fatalf("the nameless claim: %v", err)
			}
		}, runonce.ErrTickUnknown},
		{"older-writer", writeOlder, runonce.ErrTickUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := zktest.Path(t)
			s, logs := logged(t, zktest.Servers(t))
			a, err := runonce.New(s, root)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, _ := newRunner(t, root)
			ctx := zktest.Context(t, 20*time.Second)
			t0 := time.Now().Truncate(time.Second).Add(2 * time.Second)
			claimAt := func(r *runonce.Runner, tick time.Time, at time.Time) error {
				time.Sleep(time.Until(at))
				cl, err := r.ClaimTick(ctx, "job", tick)
				if err == nil {
					err = cl.Release()
				}
				return err
			}
			if err := claimAt(a, t0, t0); err != nil {
				t.Fatalf("t0 on time: %v", err)
			}
			time.Sleep(time.Until(t0.Add(time.Second)))
			c.nameless(t, b, root+"/job/run")
			if err := claimAt(a, t0.Add(2*time.Second), t0.Add(2*time.Second)); err != nil {
				t.Fatalf("t2 on time: %v", err)
			}
			err = claimAt(a, t0.Add(time.Second), t0.Add(2100*time.Millisecond))
			if !errors.Is(err, c.want) {
				t.Errorf("t1's named fire 1.1 s late, after t2's run: %v, want %v (not run: the nameless run was t1's)", err, c.want)
			}
			if err := claimAt(a, t0.Add(3*time.Second), t0.Add(3*time.Second)); err != nil {
				t.Errorf("t3 on time: %v", err)
			}
			if told := strings.Count(logs.String(), "an instance of an older version"); told != map[bool]int{true: 1}[c.name == "older-writer"] {
				t.Errorf("the older writer told %d times:\n%s", told, logs)
			}
		})
	}
}

// writeOlder writes the run node as an instance of the format before tick
// names does: it reads the record, keeps the fields it knows, and writes
// them back after a run by the server's clock (the last run's date a
// second old), dropping the names.
func writeOlder(t *testing.T, b *runonce.Runner, runPath string) {
	conn := zktest.Connect(t, zktest.Servers(t)).Conn()
	data, stat, err := conn.Get(runPath)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	old := map[string]any{"last": rec["last"], "last_by": rec["last_by"], "runs": rec["runs"], "window_ms": 500,
		"delay_ms": 1, "prev_mtime": stat.Mtime, "prev_epoch": stat.Mzxid >> 32, "by": "older:1"}
	data, _ = json.Marshal(old)
	if _, err := conn.Set(runPath, data, stat.Version); err != nil {
		t.Fatal(err)
	}
}
