package zklock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// BenchmarkColdBurst: 1,000 goroutines of one session each take a lock on
// a path of its own that does not exist yet (its parent neither), at once,
// as a scheduler's first tick over a thousand new keys; one op is one such
// burst, until every hold is granted and released. The session's writer
// sends the writes of a refused batch apart, so that a thousand failing
// creates cost one round trip rather than one each:
//
//	go test -run '^$' -bench ColdBurst -count 5 ./zklock
func BenchmarkColdBurst(b *testing.B) {
	s := connect(b, zktest.Servers(b))
	root := zktest.Path(b)
	const n = 1000
	ctx := context.Background()
	reportRequests(b, func() {
		for i := 0; i < b.N; i++ {
			var wg sync.WaitGroup
			for k := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, err := zklock.New(s, fmt.Sprintf("%s/b%d/k%d", root, i, k))
					if err != nil {
						b.Error(err)
						return
					}
					defer l.Close()
					h, err := l.Acquire(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					_ = h.Release()
				}()
			}
			wg.Wait()
		}
	})
}
