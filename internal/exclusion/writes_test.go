package exclusion

import (
	"strings"
	"testing"
)

// history builds the writes of one path in landing order from (proc,
// token) pairs.
func history(path int32, pt ...[2]int64) []Write {
	var ws []Write
	for i, p := range pt {
		ws = append(ws, Write{Path: path, Proc: int32(p[0]), Token: p[1], Seq: int64(10 * (i + 1))})
	}
	return ws
}

func TestCleanWriteHistory(t *testing.T) {
	// Several writes per hold, a hand-off's shared token in one process,
	// two paths with the same tokens, an unknown token: all fine.
	ws := append(history(0, [2]int64{0, 5}, [2]int64{0, 5}, [2]int64{1, 7}, [2]int64{1, 7}, [2]int64{1, 0}, [2]int64{2, 9}),
		history(1, [2]int64{2, 5}, [2]int64{0, 7})...)
	r := CheckWrites(ws)
	if !r.OK() || r.Writes != 8 || len(r.Paths) != 2 || r.Paths[0].Writes != 6 {
		t.Fatalf("clean history: %+v", r)
	}
}

// TestStaleWriteIsCaught is the paused holder's write that a resource let
// through: proc 0 held token 5, was paused, proc 1 was granted token 7 and
// wrote, and proc 0's write made on waking landed after it.
func TestStaleWriteIsCaught(t *testing.T) {
	ws := history(0, [2]int64{0, 5}, [2]int64{1, 7}, [2]int64{0, 5}, [2]int64{1, 7}, [2]int64{2, 9})
	// Given out of order: the check orders by Seq, not by position.
	ws[0], ws[4] = ws[4], ws[0]
	r := CheckWrites(ws)
	if r.OK() || r.Stale != 1 || len(r.Examples) != 1 {
		t.Fatalf("stale write: %+v", r)
	}
	ex := r.Examples[0]
	if ex.Write.Proc != 0 || ex.Write.Token != 5 || ex.Prev.Token != 7 || ex.Write.Seq != 30 ||
		!strings.Contains(ex.Detail, "token 5 landed after token 7") {
		t.Fatalf("example %+v", ex)
	}
	// Landed before the later holder's: not stale.
	ok := history(0, [2]int64{0, 5}, [2]int64{0, 5}, [2]int64{1, 7})
	if r := CheckWrites(ok); !r.OK() {
		t.Fatalf("writes in token order: %+v", r)
	}
}

func TestSharedTokenAcrossProcessesIsStale(t *testing.T) {
	r := CheckWrites(history(3, [2]int64{0, 5}, [2]int64{1, 5}))
	if r.Stale != 1 || !strings.Contains(r.Examples[0].Detail, "two processes") || r.Examples[0].Path != 3 {
		t.Fatalf("token of two processes: %+v", r)
	}
}

func TestPausedHoldIsCut(t *testing.T) {
	// Proc 0 holds [100, 900) but was stopped from 200 to 700 (past its
	// session); proc 1 was granted at 500. Without the pause that is an
	// overlap; with it, proc 0's hold is cut at the stop, and its loss,
	// seen on waking at 710, is not a late loss.
	holds := func() []Hold {
		return []Hold{
			{Proc: 1, Token: 1, Enter: 0, Exit: 50},
			{Proc: 0, Token: 2, Enter: 100, Exit: 900, Loss: 710},
			{Proc: 1, Token: 3, Enter: 500, Exit: 600},
			{Proc: 1, Token: 4, Enter: 950, Exit: 960},
		}
	}
	if r := Check(holds(), Options{Tokens: true}); r.Overlaps != 1 || r.LateLosses != 1 {
		t.Fatalf("without the pause: %+v", r)
	}
	pauses := map[int32][]Pause{0: {{Stop: 200, Cont: 700, Until: 800}}}
	r := Check(holds(), Options{Tokens: true, Paused: pauses})
	if !r.OK() || r.PausedCut != 1 || r.LossesChecked != 0 || r.Paths[0].PausedCut != 1 {
		t.Fatalf("paused holder: %+v", r)
	}
	// Entering before the stop is still an overlap.
	hs := holds()
	hs[2].Enter = 150
	if r := Check(hs, Options{Tokens: true, Paused: pauses}); r.Overlaps != 1 || r.PausedCut != 1 {
		t.Fatalf("entry before the stop: %+v", r)
	}
	// A pause of another process changes nothing.
	if r := Check(holds(), Options{Tokens: true, Paused: map[int32][]Pause{1: {{Stop: 200, Cont: 700}}}}); r.Overlaps != 1 {
		t.Fatalf("pause of the other process: %+v", r)
	}
}

func TestGrantedBeforeThePauseEnteredAfter(t *testing.T) {
	// Proc 0's goroutine was granted token 2 just before the stop at 200
	// and entered only after waking (at 710); proc 1 was granted token 3
	// during the pause. The late hold is cut at the stop; a hold proc 0
	// gets in a new session (token 5) is checked as any.
	holds := []Hold{
		{Proc: 0, Token: 2, Enter: 710, Exit: 720},
		{Proc: 1, Token: 3, Enter: 500, Exit: 715},
		{Proc: 0, Token: 5, Enter: 730, Exit: 740},
		{Proc: 1, Token: 4, Enter: 735, Exit: 745}, // overlaps and goes back: caught
	}
	r := Check(holds, Options{Tokens: true, Paused: map[int32][]Pause{0: {{Stop: 200, Cont: 700, Until: 800}}}})
	if r.PausedCut != 1 || r.Overlaps != 1 || r.TokenRegressions != 1 {
		t.Fatalf("late enter: %+v", r)
	}
	for _, h := range holds {
		if h.Token == 2 && (!h.Paused || h.Enter != 200 || h.Exit != 200) {
			t.Fatalf("late hold not cut at the stop: %v", h)
		}
	}
	// A semaphore: the late hold would be a fourth permit of three.
	sem := []Hold{
		{Proc: 0, Token: 2, Enter: 710, Exit: 720},
		{Proc: 1, Token: 3, Enter: 500, Exit: 800},
		{Proc: 2, Token: 4, Enter: 500, Exit: 800},
		{Proc: 3, Token: 1, Enter: 100, Exit: 800},
	}
	if r := Check(sem, Options{Permits: 3, Paused: map[int32][]Pause{0: {{Stop: 200, Cont: 700, Until: 800}}}}); !r.OK() || r.PausedCut != 1 {
		t.Fatalf("semaphore, late enter: %+v", r)
	}
}
