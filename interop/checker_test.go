package interop_test

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The independent checker of a fleet's records (see runFleet).

// outcome is what the checker found in a fleet's records.
type outcome struct {
	holds      map[string]int // by family
	total      int
	violations int            // enters while another holder had not left
	pairs      map[string]int // violations by the two families involved
	examples   []string
}

func (o outcome) String() string {
	var fams []string
	for f, n := range o.holds {
		fams = append(fams, fmt.Sprintf("%s %d", f, n))
	}
	sort.Strings(fams)
	s := fmt.Sprintf("%d violations in %d holds (%s)", o.violations, o.total, strings.Join(fams, ", "))
	if len(o.pairs) > 0 {
		var ps []string
		for p, n := range o.pairs {
			ps = append(ps, fmt.Sprintf("%s: %d", p, n))
		}
		sort.Strings(ps)
		s += "; overlapping families: " + strings.Join(ps, ", ")
	}
	return s
}

// check is the independent checker: it reads the shared record file, in
// the order the kernel appended it, and counts every enter made while
// another holder had entered and not yet left. A holder writes its enter
// after its lock said it holds and its exit before it releases, so in a
// run without overlap the records alternate strictly.
func check(r io.Reader) (outcome, error) {
	o := outcome{holds: map[string]int{}, pairs: map[string]int{}}
	inside := map[string]bool{} // holders between enter and exit: "label pid goroutine"
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || (f[0] != "E" && f[0] != "X") {
			return o, fmt.Errorf("record %d: %q is not a record", n, sc.Text())
		}
		who := strings.Join(f[1:], " ")
		fam, _, _ := strings.Cut(f[1], ":")
		if f[0] == "X" {
			if !inside[who] {
				return o, fmt.Errorf("record %d: %s leaves without having entered", n, who)
			}
			delete(inside, who)
			continue
		}
		if inside[who] {
			return o, fmt.Errorf("record %d: %s enters twice", n, who)
		}
		o.total++
		o.holds[fam]++
		if len(inside) > 0 {
			o.violations++
			for other := range inside {
				ofam, _, _ := strings.Cut(other, ":")
				pair := []string{fam, ofam}
				slices.Sort(pair)
				o.pairs[pair[0]+"+"+pair[1]]++
				if len(o.examples) < 5 {
					o.examples = append(o.examples, fmt.Sprintf("record %d: %s entered while %s held", n, who, other))
				}
			}
		}
		inside[who] = true
	}
	if len(inside) > 0 {
		return o, fmt.Errorf("holders never left: %v", inside)
	}
	return o, sc.Err()
}

// requireExclusion fails with the checker's findings, naming the
// families whose holds overlapped.
func requireExclusion(t *testing.T, o outcome) {
	t.Helper()
	t.Logf("checked: %v", o)
	if o.violations > 0 {
		t.Fatalf("mutual exclusion violated: %v\nfirst ones:\n  %s", o, strings.Join(o.examples, "\n  "))
	}
	if o.total < 100 {
		t.Fatalf("only %d holds: too few to prove anything", o.total)
	}
}
