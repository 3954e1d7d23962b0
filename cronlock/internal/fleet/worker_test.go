package fleet

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// TestRecorderOverlap: a fire of a job that starts while an earlier fire
// of it still waits for its lock makes the run of the earlier one
// ambiguous; the earlier fire, returning, writes an overlap record.
func TestRecorderOverlap(t *testing.T) {
	out := &syncBuffer{}
	r, err := newRecorder(out, config{name: "n0", jobs: []Job{{"a", "@every 1s"}}})
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	inner := r.job("a")
	job := r.fire("a", cron.FuncJob(func() { <-gate; inner.Run() }))
	done := make(chan struct{}, 2)
	run := func() { job.Run(); done <- struct{}{} }
	go run()
	eventually(t, func() bool { return strings.Count(out.String(), "fire a") == 1 })
	go run()
	eventually(t, func() bool { return strings.Count(out.String(), "fire a") == 2 })
	close(gate)
	<-done
	<-done
	var rs Records
	if err := rs.Parse(strings.NewReader(out.String())); err != nil {
		t.Fatal(err)
	}
	if len(rs.Fires) != 2 || len(rs.Runs) != 2 || rs.Overlaps != 1 {
		t.Errorf("%d fires, %d runs, %d overlaps, want 2, 2, 1:\n%s", len(rs.Fires), len(rs.Runs), rs.Overlaps, out.String())
	}
}

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// syncBuffer is a strings.Builder that the recorder's goroutines and the
// test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
