package runonce

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
)

// stalledClaim has b claim key (tick: ClaimTick; zero: Claim) while its
// process is stalled, its Runner's lock held by the test, as a stopped
// process holds it, from the claim's entry until past its lock timeout;
// meanwhile other, when not nil, runs. It returns b's error and the
// outcome b's observer heard.
func stalledClaim(t *testing.T, ctx context.Context, b *Runner, heard func() []Outcome, key string, tick time.Time, other func()) (error, Outcome) {
	t.Helper()
	b.mu.Lock()
	errs := make(chan error, 1)
	in := make(chan struct{})
	testHookEntered = func(r *Runner, k string) {
		if r == b && k == key {
			close(in)
		}
	}
	defer func() { testHookEntered = nil }()
	entered := time.Now()
	go func() {
		var c *Claim
		var err error
		if tick.IsZero() {
			c, err = b.Claim(ctx, key)
		} else {
			c, err = b.ClaimTick(ctx, key, tick)
		}
		if err == nil {
			err = c.Release()
			if err == nil {
				err = errors.New("b ran it")
			}
		}
		errs <- err
	}()
	// b's claim has entered: what other does is after its entry (a 50-ms
	// sleep stood for this hook, the least margin of docs/testing.md).
	if _, ok := zktest.Await(t, "b's claim's entry", in); !ok {
		t.FailNow()
	}
	if other != nil {
		other()
	}
	time.Sleep(time.Until(entered.Add(b.cfg.timeout + 300*time.Millisecond)))
	b.mu.Unlock()
	err := <-errs
	outcomes := heard()
	if len(outcomes) == 0 {
		t.Fatalf("b's observer heard nothing (err %v)", err)
	}
	return err, outcomes[len(outcomes)-1]
}

// TestStalledClaimToldByTheRecord: a claim of b's,
// its process stalled between its entry and its read past its lock
// timeout (a stop), while a ran the tick. The claim must not run on that
// read (fresh: the record may have been removed since), and failed, told
// "read run node: ... context deadline exceeded": a failed outcome for a
// tick the fleet ran. The record, read afresh after the stall, says what
// happened: the tick ran elsewhere (already ran), no instance ran it
// (failed: this instance could not), or, for a claim without a tick, which
// the record's runs since cannot be compared with, unknown.
func TestStalledClaimToldByTheRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a claim stalled past its lock timeout, about 6 s")
	}
	root := zktest.Path(t)
	ctx := zktest.Context(t, 60*time.Second)
	a := testRunner(t, zktest.Servers(t), root)
	var mu sync.Mutex
	var outcomes []Outcome
	b := testRunner(t, zktest.Servers(t), root, WithObserver(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		outcomes = append(outcomes, e.Outcome)
	}))
	heard := func() []Outcome {
		mu.Lock()
		defer mu.Unlock()
		return outcomes
	}
	t2 := runTwoTicks(t, ctx, a, b, "job", DefaultWindow)

	time.Sleep(DefaultWindow + 100*time.Millisecond)
	t3 := t2.Add(DefaultWindow + 200*time.Millisecond)
	err, o := stalledClaim(t, ctx, b, heard, "job", t3, func() {
		if ran, err := claimTick(ctx, a, "job", t3); !ran {
			t.Errorf("a's tick 3: %v", err)
		}
	})
	t.Logf("a ran the tick: b's stalled claim: %v (%v)", err, o)
	if !errors.Is(err, ErrAlreadyRan) || o != SkippedRan {
		t.Errorf("b's stalled claim of a tick a ran: %v (observed %v), want ErrAlreadyRan (already_ran)", err, o)
	}

	t4 := t3.Add(DefaultWindow + 200*time.Millisecond)
	err, o = stalledClaim(t, ctx, b, heard, "job", t4, nil)
	t.Logf("no instance ran the tick: b's stalled claim: %v (%v)", err, o)
	if errors.Is(err, ErrSkipped) || o != Failed {
		t.Errorf("b's stalled claim of a tick no instance ran: %v (observed %v), want a failure", err, o)
	}

	time.Sleep(DefaultWindow + 100*time.Millisecond)
	err, o = stalledClaim(t, ctx, b, heard, "plain", time.Time{}, func() {
		if ran, err := runOnceIn(ctx, a, "plain"); !ran {
			t.Errorf("a's claim: %v", err)
		}
	})
	t.Logf("a ran a claim without a tick: b's stalled claim: %v (%v)", err, o)
	if !errors.Is(err, ErrTickUnknown) || o != SkippedUnknown {
		t.Errorf("b's stalled claim without a tick, a's run after its entry: %v (observed %v), want ErrTickUnknown (unknown)", err, o)
	}
}

// runOnceIn claims key on r and releases it; it reports whether r ran it.
func runOnceIn(ctx context.Context, r *Runner, key string) (bool, error) {
	c, err := r.Claim(ctx, key)
	if err != nil {
		return false, err
	}
	return true, c.Release()
}
