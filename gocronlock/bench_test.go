package gocronlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/runonce"
)

// BenchmarkLockSkip is the cost of one attempt that finds its tick
// already run (the lock's create and delete, a read, a guarded write), in
// time and in ZooKeeper requests: what every instance but one pays per
// tick. A run pays the same and its Unlock.
func BenchmarkLockSkip(b *testing.B) {
	l, _ := newLocker(b, zktest.Path(b), runonce.WithWindow(time.Hour))
	ctx := context.Background()
	if ran, err := runOnce(ctx, l, "job", nil); !ran {
		b.Fatal(err)
	}
	zktest.ReportRequests(b, func() {
		for range b.N {
			if _, err := l.Lock(ctx, "job"); !errors.Is(err, runonce.ErrAlreadyRan) {
				b.Fatal(err)
			}
		}
	})
}
