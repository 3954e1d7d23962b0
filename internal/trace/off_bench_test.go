//go:build !tierlocktrace

package trace_test

import "testing"

func BenchmarkOff(b *testing.B) {
	for b.Loop() {
		recordAll()
	}
}
