package linear

import (
	"fmt"
	"testing"
)

// BenchmarkCheck measures the check of one path's sequential history
// (three operations a hold: acquire, write, release): in windows of the
// default size, and whole, to show what the windows save: Porcupine's
// memory and time grow with the square of a partition's operations.
//
//	go test -run '^$' -bench Check -benchmem -benchtime 3x ./internal/linear
func BenchmarkCheck(b *testing.B) {
	for _, c := range []struct {
		holds, window int
	}{
		{10000, 0}, {100000, 0}, {500000, 0},
		{10000, 1 << 30}, {20000, 1 << 30}, {40000, 1 << 30},
	} {
		h := sequential(c.holds)
		window := "whole"
		if c.window == 0 {
			window = fmt.Sprint(DefaultWindowOps)
		}
		b.Run(fmt.Sprintf("ops=%d/window=%s", 3*c.holds, window), func(b *testing.B) {
			for b.Loop() {
				if r := Check(h, Options{Tokens: true, WindowOps: c.window}); !r.OK() {
					b.Fatal(r)
				}
			}
		})
	}
}
