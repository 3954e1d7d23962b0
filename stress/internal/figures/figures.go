// Package figures computes the numbers the stress command reports:
// latency percentiles, means and Jain's fairness index.
package figures

import (
	"math"
	"slices"
)

// Latency summarizes durations, in microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Summarize returns percentiles (nearest rank) of durations given in
// nanoseconds, in microseconds. It sorts ns.
func Summarize(ns []int64) Latency {
	if len(ns) == 0 {
		return Latency{}
	}
	slices.Sort(ns)
	var sum float64
	for _, v := range ns {
		sum += float64(v)
	}
	us := func(v int64) float64 { return float64(v) / 1e3 }
	return Latency{
		P50:  us(Percentile(ns, 0.50)),
		P90:  us(Percentile(ns, 0.90)),
		P99:  us(Percentile(ns, 0.99)),
		Max:  us(ns[len(ns)-1]),
		Mean: sum / float64(len(ns)) / 1e3,
	}
}

// Percentile returns the q-quantile (0 < q <= 1) of sorted values by the
// nearest-rank method: the smallest value with at least q of the values at
// or below it.
func Percentile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Jain returns Jain's fairness index of xs, (Σx)² / (n·Σx²): 1 when all
// are equal, 1/n when one gets everything. It returns 0 for no values or
// all zero.
func Jain[T int64 | float64](xs []T) float64 {
	var s, s2 float64
	for _, x := range xs {
		f := float64(x)
		s += f
		s2 += f * f
	}
	if len(xs) == 0 || s2 == 0 {
		return 0
	}
	return s * s / (float64(len(xs)) * s2)
}

// Shares returns each count as a fraction of their sum.
func Shares(counts []int64) []float64 {
	var total int64
	for _, c := range counts {
		total += c
	}
	out := make([]float64, len(counts))
	if total == 0 {
		return out
	}
	for i, c := range counts {
		out[i] = float64(c) / float64(total)
	}
	return out
}
