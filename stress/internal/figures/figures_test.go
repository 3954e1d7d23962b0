package figures

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	v := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		q    float64
		want int64
	}{{0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}, {0.01, 1}} {
		if got := Percentile(v, c.q); got != c.want {
			t.Errorf("p%v = %d, want %d", c.q*100, got, c.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing")
	}
}

func TestSummarize(t *testing.T) {
	l := Summarize([]int64{4000, 1000, 3000, 2000})
	if l.P50 != 2 || l.Max != 4 || l.Mean != 2.5 || l.P99 != 4 {
		t.Fatalf("%+v", l)
	}
}

func TestJain(t *testing.T) {
	if j := Jain([]int64{5, 5, 5, 5}); j != 1 {
		t.Errorf("equal shares: %v", j)
	}
	if j := Jain([]int64{10, 0, 0, 0}); math.Abs(j-0.25) > 1e-12 {
		t.Errorf("one takes all: %v", j)
	}
	if j := Jain([]float64{}); j != 0 {
		t.Errorf("empty: %v", j)
	}
	if j := Jain([]int64{1, 3}); math.Abs(j-16.0/20) > 1e-12 {
		t.Errorf("1,3: %v", j)
	}
}

func TestShares(t *testing.T) {
	s := Shares([]int64{1, 3})
	if s[0] != 0.25 || s[1] != 0.75 {
		t.Fatal(s)
	}
}
