package exclusion

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// A Journal is the record of holds that several processes share: each
// appends one line per event to the same file, opened with O_APPEND, in a
// single write(2). The kernel orders appends to one file, so the file is
// one order of every enter and exit of every process, and [ReadJournal]
// needs no clock. A line is
//
//	E <proc> <goroutine> <path> <token>   entered (token 0: unknown)
//	X <proc> <goroutine> <path>           left
//	L <proc> <goroutine> <path>           saw the hold lost
//	C <proc> <path>                       about to close its lock on path
//
// which a program in any language can write. A C line ends, there, every
// hold of proc on path still open: it is written before the process calls
// the lock's Close, which cancels each hold it finds before it gives the
// node up, so each such hold ended after the line and before any other
// process could enter; the holder's own exit, written once its goroutine
// saw the cancellation (which on a loaded machine can come after another
// process entered), is then ignored. (An L line before the exit ends the
// hold too, at the L: see Check.) A hold entered after the C line (a
// grant racing Close, the case Close must get right) is not cut: its own
// exit ends it.
type Journal struct {
	mu sync.Mutex // one line per write: bufio is not used
	f  *os.File
}

// OpenJournal opens (creating it if needed) the journal file at path for
// appending.
func OpenJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &Journal{f: f}, nil
}

func (j *Journal) write(line string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err := j.f.WriteString(line)
	return err
}

// Enter appends that goroutine g of process proc entered path's critical
// section with token. Call it after the lock said it holds.
func (j *Journal) Enter(proc, g, path int32, token int64) error {
	return j.write(fmt.Sprintf("E %d %d %d %d\n", proc, g, path, token))
}

// Exit appends that goroutine g of process proc left path's critical
// section. Call it before releasing the lock.
func (j *Journal) Exit(proc, g, path int32) error {
	return j.write(fmt.Sprintf("X %d %d %d\n", proc, g, path))
}

// Closing appends that process proc is about to close its lock on path:
// its holds of path open now end at this line (see the C line above).
func (j *Journal) Closing(proc, path int32) error {
	return j.write(fmt.Sprintf("C %d %d\n", proc, path))
}

// Lost appends that goroutine g of process proc saw its hold of path lost.
func (j *Journal) Lost(proc, g, path int32) error {
	return j.write(fmt.Sprintf("L %d %d %d\n", proc, g, path))
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// ReadJournal reads a journal into holds whose times are line numbers
// (from 1): an enter on line 7 and its exit on line 9 make the hold
// [7, 9). A hold never left has Exit 0, which [Check] counts as lost. A
// line that is not a record, an exit or a loss of a hold that is not open,
// and a second enter of an open hold are errors.
func ReadJournal(r io.Reader) ([]Hold, error) {
	var jr journalReader
	sc := bufio.NewScanner(r)
	for n := int64(1); sc.Scan(); n++ {
		if err := jr.line(n, sc.Text()); err != nil {
			return jr.holds, err
		}
	}
	return jr.holds, sc.Err()
}

type journalKey struct{ proc, g, path int32 }

// journalReader is ReadJournal's state: the holds so far, the open ones,
// and those a C line ended whose own exit (and loss) is still to come.
type journalReader struct {
	holds []Hold
	open  map[journalKey]int
	cut   map[journalKey]bool
}

func (jr *journalReader) line(n int64, text string) error {
	if jr.open == nil {
		jr.open, jr.cut = map[journalKey]int{}, map[journalKey]bool{}
	}
	f := strings.Fields(text)
	nums, ok := parseRecord(f)
	if !ok {
		return fmt.Errorf("journal line %d: %q is not a record", n, text)
	}
	if f[0] == "C" {
		for k, i := range jr.open {
			if k.proc == int32(nums[0]) && k.path == int32(nums[1]) {
				jr.holds[i].Exit = n
				delete(jr.open, k)
				jr.cut[k] = true
			}
		}
		return nil
	}
	k := journalKey{int32(nums[0]), int32(nums[1]), int32(nums[2])}
	i, isOpen := jr.open[k]
	switch {
	case f[0] == "E" && isOpen:
		return fmt.Errorf("journal line %d: proc %d goroutine %d enters path %d twice", n, k.proc, k.g, k.path)
	case f[0] == "E":
		if jr.cut[k] {
			return fmt.Errorf("journal line %d: proc %d goroutine %d enters path %d before leaving the hold Close ended", n, k.proc, k.g, k.path)
		}
		jr.open[k] = len(jr.holds)
		jr.holds = append(jr.holds, Hold{Proc: k.proc, G: k.g, Path: k.path, Token: nums[3], Enter: n})
	case jr.cut[k]:
		// The exit or loss of a hold a C line ended: already over.
		if f[0] == "X" {
			delete(jr.cut, k)
		}
	case !isOpen:
		return fmt.Errorf("journal line %d: proc %d goroutine %d was not in path %d", n, k.proc, k.g, k.path)
	case f[0] == "L":
		jr.holds[i].Loss = n
	default:
		jr.holds[i].Exit = n
		delete(jr.open, k)
	}
	return nil
}

// parseRecord returns the numbers of a journal line split into fields: four
// for an enter, three for an exit or a loss, two for a close.
func parseRecord(f []string) ([]int64, bool) {
	if len(f) == 0 {
		return nil, false
	}
	want := map[string]int{"E": 4, "X": 3, "L": 3, "C": 2}[f[0]]
	if want == 0 || len(f) != want+1 {
		return nil, false
	}
	nums := make([]int64, want)
	for i, s := range f[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, false
		}
		nums[i] = v
	}
	return nums, true
}
