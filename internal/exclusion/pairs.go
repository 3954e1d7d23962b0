package exclusion

import (
	"slices"
)

// OverlapPairs counts, per pair of groups, the holds that began while a
// hold of the same path had not ended (against the one that ends last):
// who overlapped whom, in a fleet whose processes run different lock
// implementations. group names the group of a process; a pair is named
// "a+b", the two names in order.
func OverlapPairs(holds []Hold, group func(proc int32) string) map[string]int {
	sorted := slices.Clone(holds)
	slices.SortFunc(sorted, func(a, b Hold) int {
		if a.Path != b.Path {
			return int(a.Path - b.Path)
		}
		return int(min(max(a.Enter-b.Enter, -1), 1))
	})
	out := map[string]int{}
	var last *Hold
	for i := range sorted {
		h := &sorted[i]
		if last != nil && last.Path != h.Path {
			last = nil
		}
		if last != nil && (last.Exit == 0 || h.Enter < last.Exit) {
			pair := []string{group(h.Proc), group(last.Proc)}
			slices.Sort(pair)
			out[pair[0]+"+"+pair[1]]++
		}
		if last == nil || (last.Exit != 0 && (h.Exit == 0 || h.Exit > last.Exit)) {
			last = h
		}
	}
	return out
}
