package exclusion

import (
	"cmp"
	"slices"
)

// The cuts Check makes before it judges a hold: where a hold of a killed
// or paused process, or one whose holder saw its loss before leaving, is
// taken to end (see the package doc).

// cutKilled ends a hold of a killed process that never ended at the kill.
func cutKilled(h *Hold, opt Options, pr *PathResult) {
	if kill, killed := opt.Killed[h.Proc]; killed && h.Exit == 0 && h.Enter <= kill {
		h.Exit, h.Cut = kill, true
		pr.Cut++
	}
}

// cutAtLoss ends at its loss a hold whose holder saw the loss before it
// left (not a paused one: its loss was seen on waking, after its cut).
func cutAtLoss(h *Hold, pr *PathResult) {
	if h.Loss != 0 && !h.Paused && h.Enter <= h.Loss && h.Loss < h.Exit {
		h.Exit, h.Told = h.Loss, true
		pr.ToldCut++
	}
}

// cutPaused cuts, at the stop, the holds of paused processes that were in
// progress when they were stopped, and those granted before a stop but
// entered after the process woke (see the package doc). It runs before the
// holds are sorted for the checks; the paths' order is its own.
func cutPaused(holds []Hold, paused map[int32][]Pause) {
	if len(paused) == 0 {
		return
	}
	if !cutAtStop(holds, paused) {
		return
	}
	// Holds by path in enter order, to find the tokens granted to other
	// processes between a stop and a late enter.
	byPath := map[int32][]*Hold{}
	for i := range holds {
		byPath[holds[i].Path] = append(byPath[holds[i].Path], &holds[i])
	}
	type cut struct {
		h    *Hold
		stop int64
	}
	var cuts []cut // applied once every path is searched: the search needs the enter order
	for _, hs := range byPath {
		slices.SortFunc(hs, func(a, b *Hold) int { return cmp.Compare(a.Enter, b.Enter) })
		for _, h := range hs {
			if stop, ok := lateGrant(hs, h, paused[h.Proc]); ok {
				cuts = append(cuts, cut{h, stop})
			}
		}
	}
	for _, c := range cuts {
		c.h.Enter, c.h.Exit, c.h.Paused = c.stop, c.stop, true
	}
}

// cutAtStop cuts at the stop the holds in progress when their process was
// stopped, and reports whether some hold of a paused process entered in
// an aftermath (after a wake, before its Until).
func cutAtStop(holds []Hold, paused map[int32][]Pause) (late bool) {
	for i := range holds {
		h := &holds[i]
		for _, p := range paused[h.Proc] {
			if h.Enter < p.Stop && (h.Exit == 0 || h.Exit > p.Stop) {
				h.Exit, h.Paused = p.Stop, true
				break
			}
			if h.Enter >= p.Cont && h.Enter <= max(p.Until, p.Cont) {
				late = true
			}
		}
	}
	return late
}

// lateGrant reports whether h, entered in the aftermath of one of its
// process's pauses, was granted before that pause's stop (and the stop).
func lateGrant(hs []*Hold, h *Hold, pauses []Pause) (int64, bool) {
	if h.Paused || h.Token == 0 {
		return 0, false
	}
	for _, p := range pauses {
		if h.Enter < p.Cont || h.Enter > max(p.Until, p.Cont) {
			continue
		}
		return p.Stop, grantedBefore(hs, h, p.Stop)
	}
	return 0, false
}

// grantedBefore reports whether h, entered after its process woke, carries
// a token below that of a hold of another process entered since stop that
// excludes it (for a read hold: a write hold; hs is in enter order): h's
// node queued before that one, so it was granted before the stop.
func grantedBefore(hs []*Hold, h *Hold, stop int64) bool {
	i, _ := slices.BinarySearchFunc(hs, stop, func(k *Hold, t int64) int { return cmp.Compare(k.Enter, t) })
	for ; i < len(hs) && hs[i].Enter < h.Enter; i++ {
		k := hs[i]
		if k.Proc == h.Proc || k.Token == 0 || (h.Shared && k.Shared) {
			continue
		}
		if h.Token < k.Token {
			return true
		}
	}
	return false
}
