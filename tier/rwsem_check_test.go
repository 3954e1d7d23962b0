package tier_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// recKind is what a record says: a reader, writer or lease holder entering
// or leaving.
type recKind byte

const (
	recR  recKind = 'R' // reader enters
	recRx recKind = 'r' // reader exits
	recW  recKind = 'W' // writer enters
	recWx recKind = 'w' // writer exits
	recS  recKind = 'S' // k permits taken
	recSx recKind = 's' // k permits returned
)

type record struct {
	kind  recKind
	who   string
	k     int   // permits (S, s)
	token int64 // writer's fencing token (W)
}

// recorder is the in-test log: enter records are appended after the
// acquisition returns and exit records before the release starts, under
// one mutex, so the log's order is a global order of the holds that is
// consistent with real time: if two holds overlapped, their records
// overlap too.
type recorder struct {
	mu  sync.Mutex
	log []record
}

func (r *recorder) add(rec record) {
	r.mu.Lock()
	r.log = append(r.log, rec)
	r.mu.Unlock()
}

// rwVerdict is the independent checker's finding over a log.
type rwVerdict struct {
	violations []string
	maxReaders int // readers in at once
	reads      int
	writes     int
}

// parseRecords reads the lines of an O_APPEND records file: "<kind> <label>
// <pid> <thread> [<permits or token>]".
func parseRecords(b []byte) ([]record, error) {
	var out []record
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || len(f[0]) != 1 {
			return nil, fmt.Errorf("line %d: %q", i+1, line)
		}
		rec := record{kind: recKind(f[0][0]), who: strings.Join(f[1:4], "/"), k: 1}
		if len(f) > 4 {
			n, err := strconv.ParseInt(f[4], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q", i+1, line)
			}
			if rec.kind == recW {
				rec.token = n
			} else {
				rec.k = int(n)
			}
		}
		out = append(out, rec)
	}
	return out, nil
}

// checkRW replays the log: a writer may enter only when nobody is in, a
// reader only when no writer is; writer tokens must increase strictly.
func checkRW(log []record) rwVerdict {
	var v rwVerdict
	readers, writers := map[string]int{}, 0
	nreaders := 0
	var lastToken int64
	for i, rec := range log {
		switch rec.kind {
		case recR:
			v.reads++
			if writers > 0 {
				v.violations = append(v.violations, fmt.Sprintf("#%d: reader %s enters under a writer", i, rec.who))
			}
			readers[rec.who]++
			nreaders++
			v.maxReaders = max(v.maxReaders, nreaders)
		case recRx:
			if readers[rec.who] == 0 {
				v.violations = append(v.violations, fmt.Sprintf("#%d: reader %s leaves unentered", i, rec.who))
				continue
			}
			readers[rec.who]--
			nreaders--
		case recW:
			v.writes++
			if writers > 0 || nreaders > 0 {
				v.violations = append(v.violations, fmt.Sprintf("#%d: writer %s enters with %d writers, %d readers in", i, rec.who, writers, nreaders))
			}
			if rec.token != 0 { // 0: a peer that does not report tokens
				if rec.token <= lastToken {
					v.violations = append(v.violations, fmt.Sprintf("#%d: writer %s token %d after %d", i, rec.who, rec.token, lastToken))
				}
				lastToken = rec.token
			}
			writers++
		case recWx:
			writers--
		}
	}
	return v
}

// checkSem replays the log: the permits in use never exceed n. It returns
// the violations and the most permits in use at once.
func checkSem(log []record, n int) (violations []string, peak int) {
	inUse := 0
	for i, rec := range log {
		switch rec.kind {
		case recS:
			inUse += rec.k
			peak = max(peak, inUse)
			if inUse > n {
				violations = append(violations, fmt.Sprintf("#%d: %s takes %d: %d of %d in use", i, rec.who, rec.k, inUse, n))
			}
		case recSx:
			inUse -= rec.k
		}
	}
	return violations, peak
}

// The checker itself catches what it must.
func TestRWSemChecker(t *testing.T) {
	bad := []record{{kind: recR, who: "a"}, {kind: recW, who: "b", token: 1}, {kind: recWx, who: "b"}, {kind: recRx, who: "a"}}
	if v := checkRW(bad); len(v.violations) == 0 {
		t.Error("a writer under a reader was not caught")
	}
	good := []record{{kind: recR, who: "a"}, {kind: recR, who: "b"}, {kind: recRx, who: "a"}, {kind: recRx, who: "b"},
		{kind: recW, who: "c", token: 5}, {kind: recWx, who: "c"}, {kind: recW, who: "c", token: 5}, {kind: recWx, who: "c"}}
	v := checkRW(good)
	if len(v.violations) != 1 || v.maxReaders != 2 {
		t.Errorf("good log with a repeated token: %+v; want one token violation, 2 readers", v)
	}
	if bad, _ := checkSem([]record{{kind: recS, k: 2}, {kind: recS, k: 2}}, 3); len(bad) == 0 {
		t.Error("over-admission not caught")
	}
}
