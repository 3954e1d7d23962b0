package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/child"
	"github.com/tierlock/tierlock/stress/internal/proto"
)

// TestMain: the test binary is also the fake workers of these tests.
func TestMain(m *testing.M) {
	child.Dispatch(map[string]func() int{proto.Role: fakeWorker})
	goleak.VerifyTestMain(m)
}

// fakeWorker speaks the protocol without any lock: Ready, then Done on Go,
// then its Result on Exit.
func fakeWorker() int {
	var task proto.Task
	if err := child.Task(&task); err != nil {
		return 2
	}
	enc := json.NewEncoder(os.Stdout)
	_ = enc.Encode(proto.Message{Type: proto.Ready})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch proto.Command(sc.Text()) {
		case proto.Go:
			_ = enc.Encode(proto.Message{Type: proto.Progress, N: int64(task.Proc)})
			_ = enc.Encode(proto.Message{Type: proto.Done})
		case proto.Exit:
			_ = enc.Encode(proto.Message{Type: proto.ResultMsg, Result: &proto.Result{Records: int64(task.Proc)}})
			return 0
		}
	}
	return 0
}

func TestFleet(t *testing.T) {
	f := New("", nil)
	defer f.Shutdown(true)
	task := func(proc int) proto.Task { return proto.Task{Proc: proc} }
	for range 3 {
		if _, err := f.Start(task); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if _, err := f.Await(ctx, proto.Ready, 30*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	// Worker 1 is killed and replaced by worker 3, which must be ready too.
	w, err := f.Replace(1, task)
	if err != nil {
		t.Fatal(err)
	}
	if w.Index != 3 || !f.Killed(1) || len(f.Live()) != 3 {
		t.Fatalf("replacement %d, killed %v, live %v", w.Index, f.Killed(1), f.Live())
	}
	for {
		m := <-f.Msgs
		if m.EOF && m.Proc == 1 {
			if !f.Ended(1) {
				t.Fatal("the killed worker's end counted as unexpected")
			}
			continue
		}
		if m.Proc == 3 && m.Type == proto.Ready {
			break
		}
	}
	f.Broadcast(proto.Go)
	var progress int64
	if _, err := f.Await(ctx, proto.Done, 30*time.Second, func(m Msg) {
		if m.Type == proto.Progress {
			progress += m.N
		}
	}); err != nil {
		t.Fatal(err)
	}
	if progress != 0+2+3 {
		t.Errorf("progress of workers 0, 2, 3: %d", progress)
	}
	f.Broadcast(proto.Exit)
	results := map[int]int64{}
	if _, err := f.Await(ctx, proto.ResultMsg, 30*time.Second, func(m Msg) {
		if m.Type == proto.ResultMsg {
			results[m.Proc] = m.Result.Records
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || results[3] != 3 {
		t.Errorf("results %v", results)
	}
	f.Shutdown(false)
}

func TestAwaitReportsADeadWorker(t *testing.T) {
	f := New("", nil)
	defer f.Shutdown(true)
	w, err := f.Start(func(proc int) proto.Task { return proto.Task{Proc: proc} })
	if err != nil {
		t.Fatal(err)
	}
	w.Kill() // not through the fleet: an unexpected end
	if _, err := f.Await(context.Background(), proto.Done, 30*time.Second, nil); err == nil {
		t.Fatal("no error for a worker that died")
	}
}
