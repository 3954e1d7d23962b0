package main

import (
	"cmp"
	"strings"
)

// naturalCompare orders names as a person reads them: runs of digits by
// their value, everything else byte by byte, so that job-2 comes before
// job-10 (strings.Compare puts job-10 first). Numbers equal in value
// (job-01, job-1) fall back to strings.Compare, so that the order is
// total and the same on every run.
func naturalCompare(a, b string) int {
	x, y := a, b
	for x != "" && y != "" {
		if isDigit(x[0]) && isDigit(y[0]) {
			nx, ny := digitsPrefix(x), digitsPrefix(y)
			if c := compareNumbers(x[:nx], y[:ny]); c != 0 {
				return c
			}
			x, y = x[nx:], y[ny:]
			continue
		}
		if x[0] != y[0] {
			return cmp.Compare(x[0], y[0])
		}
		x, y = x[1:], y[1:]
	}
	if c := cmp.Compare(len(x), len(y)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// comparePaths orders ZooKeeper paths segment by segment, each segment
// in naturalCompare's order: a znode's descendants come right after it,
// before its next sibling, as a depth-first walk in that order meets them
// (/r/a/job-9, /r/a/job-10, /r/a-2).
func comparePaths(a, b string) int {
	for {
		sa, restA, moreA := strings.Cut(a, "/")
		sb, restB, moreB := strings.Cut(b, "/")
		if c := naturalCompare(sa, sb); c != 0 {
			return c
		}
		switch {
		case !moreA && !moreB:
			return 0
		case !moreA:
			return -1
		case !moreB:
			return 1
		}
		a, b = restA, restB
	}
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitsPrefix returns the length of s's leading run of ASCII digits.
func digitsPrefix(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

// compareNumbers compares two runs of digits by value, however long.
func compareNumbers(x, y string) int {
	x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
	if c := cmp.Compare(len(x), len(y)); c != 0 {
		return c
	}
	return strings.Compare(x, y)
}
