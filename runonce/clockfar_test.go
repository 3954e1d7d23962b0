package runonce_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// TestHostClockFarBehind (the ninth review of the fleet, item 2): a's host
// clock is behind b's by more ticks than the run node keeps (10 periods,
// the record keeps 8). b runs every tick, as its clock names them; a's
// ticks on time are older than every run the record names, so a cannot
// tell whether they ran. They ran: a must say "unknown", never "lost: a
// tick no instance ran" (on the code before, every one of a's ticks was
// told and counted lost, for ever), and say once that the hosts' clocks
// differ by more than the record keeps.
func TestHostClockFarBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ticks of two hosts' clocks far apart, about 4 s")
	}
	root := zktest.Path(t)
	const w, period, behind = 100 * time.Millisecond, 300 * time.Millisecond, 10
	sa, logs := logged(t, zktest.Servers(t))
	a, err := runonce.New(sa, root, runonce.WithWindow(w), runonce.WithInstanceName("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := newRunner(t, root, runonce.WithWindow(w), runonce.WithInstanceName("b"))
	ctx := zktest.Context(t, 30*time.Second)
	t0 := time.Now().Truncate(period).Add(period)
	var aSaid []string
	for k := range 12 {
		tk := t0.Add(time.Duration(k) * period)
		time.Sleep(time.Until(tk))
		if c, err := b.ClaimTick(ctx, "job", tk.Add(behind*period)); err != nil {
			t.Fatalf("b's tick %d: %v", k, err)
		} else {
			_ = c.Release()
		}
		time.Sleep(30 * time.Millisecond)
		c, err := a.ClaimTick(ctx, "job", tk)
		switch {
		case err == nil:
			_ = c.Release()
			aSaid = append(aSaid, "ran")
		case errors.Is(err, runonce.ErrTickUnknown):
			aSaid = append(aSaid, "unknown")
		default:
			aSaid = append(aSaid, err.Error())
		}
	}
	for k, said := range aSaid[len(aSaid)-3:] {
		if said != "unknown" {
			t.Errorf("a's tick %d, 10 ticks behind b's runs: %q, want unknown", len(aSaid)-3+k, said)
		}
	}
	out := logs.String()
	if strings.Contains(out, "no instance ran") || strings.Contains(out, "ticks_lost") {
		t.Errorf("ticks b ran told lost:\n%s", out)
	}
	if strings.Count(out, "ticks unknown:") != 1 || strings.Count(out, "differ by more than the job's record keeps") != 1 {
		t.Errorf("want one line of ticks unknown and one of the clocks beyond the record:\n%s", out)
	}
	t.Logf("a's outcomes: %v", aSaid)
}
