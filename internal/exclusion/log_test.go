package exclusion

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tierlock/tierlock/internal/zktest"
)

func TestLogOrdersCalls(t *testing.T) {
	var l Log
	a := l.Enter(0, 0, 0, 1)
	b := l.Enter(1, 0, 0, 2) // before a's exit: an overlap, however close
	a.Exit()
	b.Exit()
	if r := l.Check(Options{Tokens: true}); r.Overlaps != 1 || r.Holds != 2 {
		t.Fatalf("overlap in call order: %+v", r)
	}
	var ok Log
	for i := range 100 {
		ok.Enter(int32(i%3), 0, 0, int64(i+1)).Exit()
	}
	if r := ok.Check(Options{Tokens: true}); !r.OK() || r.Holds != 100 {
		t.Fatalf("sequential holds: %+v", r)
	}
	if h, found := ok.First(func(h Hold) bool { return h.Proc == 2 }); !found || h.Token != 3 {
		t.Fatalf("First: %+v %v", h, found)
	}
}

func TestLogConcurrent(t *testing.T) {
	var l Log
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				mu.Lock()
				e := l.Enter(int32(g), 0, 0, 0)
				e.Exit()
				mu.Unlock()
			}
		}()
	}
	zktest.Wait(t, "the goroutines", &wg)
	if r := l.Check(Options{}); !r.OK() || r.Holds != 400 {
		t.Fatalf("holds under a mutex: %+v", r)
	}
}

func TestJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(j.Enter(0, 1, 0, 5))
	must(j.Exit(0, 1, 0))
	must(j.Enter(1, 0, 0, 6))
	must(j.Enter(2, 0, 1, 1)) // another path
	must(j.Lost(1, 0, 0))
	must(j.Enter(0, 2, 0, 7)) // after proc 1 saw its loss, before it left: not an overlap
	must(j.Exit(1, 0, 0))
	must(j.Exit(0, 2, 0))
	must(j.Close())
	f, err := os.Open(path)
	must(err)
	defer f.Close()
	holds, err := ReadJournal(f)
	must(err)
	if len(holds) != 4 || holds[1].Enter != 3 || holds[1].Loss != 5 || holds[1].Exit != 7 {
		t.Fatalf("holds %+v", holds)
	}
	r := Check(holds, Options{Tokens: true})
	if r.Overlaps != 0 || r.ToldCut != 1 || r.LateLosses != 0 || r.Holds != 4 || r.Lost != 1 {
		t.Fatalf("journal check: %+v", r)
	}
	for _, bad := range []string{"E 1 2 3\n", "X 1 2 3\n", "E 1 1 1 1\nE 1 1 1 2\n", "Q 1 2 3\n", "E a b c d\n"} {
		if _, err := ReadJournal(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadJournal(%q): no error", bad)
		}
	}
}

// A C line ends proc's open holds of the path there: the holder's own
// exit, written late (after another process entered), is then ignored. A
// hold entered after the C line (a grant racing Close) is not cut, and its
// overlap is still found.
func TestJournalClosingEndsOpenHolds(t *testing.T) {
	j := strings.Join([]string{
		"E 0 1 0 5", // 1: proc 0 holds
		"C 0 0",     // 2: proc 0 is about to close its lock: the hold ends here
		"E 1 0 0 6", // 3: proc 1 enters after Close gave the node up
		"L 0 1 0",   // 4: proc 0's goroutine saw the cancellation late: what it
		"X 0 1 0",   // 5: writes for that hold is ignored
		"X 1 0 0",   // 6
		"E 0 2 0 7", // 7: a grant that raced Close: not cut
		"E 1 1 0 8", // 8: overlaps proc 0 goroutine 2
		"X 0 2 0",   // 9
		"X 1 1 0",   // 10
	}, "\n") + "\n"
	holds, err := ReadJournal(strings.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	if len(holds) != 4 || holds[0].Exit != 2 || holds[0].Loss != 0 || holds[2].Exit != 9 {
		t.Fatalf("holds %+v", holds)
	}
	r := Check(holds, Options{Tokens: true})
	if r.Overlaps != 1 || r.Holds != 4 || r.Lost != 0 {
		t.Fatalf("journal check: %+v (want the racing grant's overlap only)", r)
	}
	if v := r.Examples[0]; v.Hold.Proc != 1 || v.Hold.G != 1 || v.Prev.Proc != 0 || v.Prev.G != 2 {
		t.Fatalf("overlap %v after %v: want proc 1 goroutine 1 after proc 0 goroutine 2", v.Hold, v.Prev)
	}
	// Without the C line, the late exit is an overlap.
	late := strings.Replace(j, "C 0 0\n", "", 1)
	late = strings.Replace(late, "L 0 1 0\n", "", 1)
	holds, err = ReadJournal(strings.NewReader(late))
	if err != nil {
		t.Fatal(err)
	}
	if r := Check(holds, Options{Tokens: true}); r.Overlaps != 2 {
		t.Fatalf("without C: %d overlaps, want 2", r.Overlaps)
	}
	if _, err := ReadJournal(strings.NewReader("E 0 1 0 5\nC 0 0\nE 0 1 0 6\n")); err == nil {
		t.Error("an enter before the exit of the hold Close ended: no error")
	}
}
