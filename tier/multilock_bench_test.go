package tier_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/tier"
)

// Uncontended Acquire + Release of a k-member multi-lock, against k single
// locks taken and released one after the other (k=1 is the single lock's
// BenchmarkUncontended), with the ZooKeeper requests each costs:
//
//	go test -run '^$' -bench 'MultiLock' -benchtime 300x -count 3 ./tier
func BenchmarkMultiLockUncontended(b *testing.B) {
	for _, k := range []int{1, 3} {
		s := connect(b, zktest.Servers(b))
		root := zktest.Path(b)
		locks := make([]*tier.Lock, k)
		members := make([]tier.Member, k)
		for i := range locks {
			locks[i] = newLock(b, s, fmt.Sprintf("%s/k%d/p%d", root, k, i))
			members[i] = locks[i]
		}
		m, err := tier.NewMultiLock(members...)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.Run(fmt.Sprintf("multi-%d", k), func(b *testing.B) {
			counted(b, func() {
				for b.Loop() {
					held, err := m.Acquire(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if err := m.Release(held); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run(fmt.Sprintf("singles-%d", k), func(b *testing.B) {
			helds := make([]context.Context, k)
			counted(b, func() {
				for b.Loop() {
					for i, l := range locks {
						var err error
						if helds[i], err = l.Acquire(ctx); err != nil {
							b.Fatal(err)
						}
					}
					for i := k - 1; i >= 0; i-- {
						if err := locks[i].Release(helds[i]); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		})
		b.Run(fmt.Sprintf("reentry-%d", k), func(b *testing.B) {
			held, err := m.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Release(held)
			counted(b, func() {
				for b.Loop() {
					if _, err := m.Acquire(held); err != nil {
						b.Fatal(err)
					}
					if err := m.Release(held); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
