package await

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCallReturnsTheResult(t *testing.T) {
	v, err := Call(context.Background(), func() (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Fatalf("Call = %d, %v; want 7, nil", v, err)
	}
}

// A request that has not answered when ctx ends: Call returns ctx's cause
// at once, and the request's goroutine ends when the request does.
func TestCallGivesUpWithTheCause(t *testing.T) {
	cause := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := Call(ctx, func() (int, error) { <-release; return 1, nil })
		if !errors.Is(err, cause) {
			t.Errorf("Call = %v, want the cause %v", err, cause)
		}
	}()
	cancel(cause)
	<-done
	close(release) // the abandoned request ends: goleak checks its goroutine
}
