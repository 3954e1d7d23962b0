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
//
// which a program in any language can write.
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
	type key struct{ proc, g, path int32 }
	var holds []Hold
	open := map[key]int{}
	sc := bufio.NewScanner(r)
	for n := int64(1); sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		nums, ok := parseRecord(f)
		if !ok {
			return holds, fmt.Errorf("journal line %d: %q is not a record", n, sc.Text())
		}
		k := key{int32(nums[0]), int32(nums[1]), int32(nums[2])}
		i, isOpen := open[k]
		switch f[0] {
		case "E":
			if isOpen {
				return holds, fmt.Errorf("journal line %d: proc %d goroutine %d enters path %d twice", n, k.proc, k.g, k.path)
			}
			open[k] = len(holds)
			holds = append(holds, Hold{Proc: k.proc, G: k.g, Path: k.path, Token: nums[3], Enter: n})
		case "X", "L":
			if !isOpen {
				return holds, fmt.Errorf("journal line %d: proc %d goroutine %d was not in path %d", n, k.proc, k.g, k.path)
			}
			if f[0] == "L" {
				holds[i].Loss = n
				continue
			}
			holds[i].Exit = n
			delete(open, k)
		}
	}
	return holds, sc.Err()
}

// parseRecord returns the numbers of a journal line split into fields: four
// for an enter, three for an exit or a loss.
func parseRecord(f []string) ([]int64, bool) {
	if len(f) == 0 {
		return nil, false
	}
	want := map[string]int{"E": 4, "X": 3, "L": 3}[f[0]]
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
