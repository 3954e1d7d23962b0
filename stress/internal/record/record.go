// Package record holds the hold records that stress workers write and the
// parent reads: one fixed-size record per critical section, stamped with
// exclusion.Now, a clock that every process on the machine shares.
//
// A worker writes its records into a memory-mapped file (MAP_SHARED). A
// store into the mapping lands in the kernel's page cache at once, so the
// records survive the worker being killed with SIGKILL: a hold that was
// entered but never left shows up as a record with an enter time and no
// exit time, which the checker reports as lost. No system call is made per
// record.
package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Hold is one critical section as a worker saw it.
type Hold struct {
	Enter   int64 // CLOCK_MONOTONIC ns, taken after Acquire returned
	Exit    int64 // CLOCK_MONOTONIC ns, taken before Release; 0: never left
	Token   int64 // fencing token of the hold (0: unknown)
	Latency int64 // ns spent in Acquire
	G       int32 // goroutine number within the worker
	Path    int32 // index of the lock path
	// Lost is when the worker saw the hold lost (its held context
	// cancelled by a loss, CLOCK_MONOTONIC ns); 0: not lost, or not
	// watched (runs without faults).
	Lost int64
	Kind Kind // what the hold was: zero for a mutex's
}

// Kind says what a hold is: the zero Kind is a mutex hold; Shared marks a
// read hold of a read/write lock (a write hold is exclusive, like a
// mutex's); Permits is the permits of a semaphore hold.
type Kind struct {
	Shared  bool
	Permits int32
}

// Size is the size of one record in a file.
const Size = 64

// Field offsets inside a record; the last word is the "written" mark.
const (
	offEnter   = 0
	offExit    = 8
	offToken   = 16
	offLatency = 24
	offG       = 32 // low half: goroutine, high half: path
	offLost    = 40
	offKind    = 48 // low half: permits, bit 32: shared
	offMark    = 56
	mark       = 0x486f6c64 // "Hold"
)

// ErrFull is returned when a Writer has no free record left.
var ErrFull = errors.New("record: file full")

// Writer hands out records of a memory-mapped file to concurrent writers.
type Writer struct {
	f    *os.File
	mem  []byte
	cap  int64
	next atomic.Int64
}

// Create makes a file with room for capacity records and maps it. The file
// is sparse: pages that no record touches take no space.
func Create(path string, capacity int64) (*Writer, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("record: capacity %d", capacity)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(capacity * Size); err != nil {
		f.Close()
		return nil, fmt.Errorf("record: size %s: %w", path, err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(capacity*Size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("record: map %s: %w", path, err)
	}
	return &Writer{f: f, mem: mem, cap: capacity}, nil
}

// Slot is one claimed record.
type Slot struct{ p unsafe.Pointer }

func (s Slot) word(off uintptr) *int64 { return (*int64)(unsafe.Add(s.p, off)) }

// Enter claims the next record and writes the start of a mutex hold into
// it.
func (w *Writer) Enter(enter, token, latency int64, g, path int32) (Slot, error) {
	return w.EnterKind(enter, token, latency, g, path, Kind{})
}

// EnterKind is Enter for a hold of kind k.
func (w *Writer) EnterKind(enter, token, latency int64, g, path int32, k Kind) (Slot, error) {
	i := w.next.Add(1) - 1
	if i >= w.cap {
		return Slot{}, ErrFull
	}
	s := Slot{unsafe.Pointer(&w.mem[i*Size])}
	atomic.StoreInt64(s.word(offEnter), enter)
	atomic.StoreInt64(s.word(offToken), token)
	atomic.StoreInt64(s.word(offLatency), latency)
	atomic.StoreInt64(s.word(offG), int64(uint32(g))|int64(uint32(path))<<32)
	kind := int64(uint32(k.Permits))
	if k.Shared {
		kind |= 1 << 32
	}
	atomic.StoreInt64(s.word(offKind), kind)
	atomic.StoreInt64(s.word(offMark), mark) // last: the record is valid
	return s, nil
}

// Exit writes the end of the hold.
func (s Slot) Exit(exit int64) { atomic.StoreInt64(s.word(offExit), exit) }

// Lost writes when the hold was seen lost.
func (s Slot) Lost(at int64) { atomic.StoreInt64(s.word(offLost), at) }

// Count returns how many records were claimed.
func (w *Writer) Count() int64 { return min(w.next.Load(), w.cap) }

// Close unmaps the file and cuts it to the records written.
func (w *Writer) Close() error {
	n := w.Count()
	err := syscall.Munmap(w.mem)
	w.mem = nil
	if e := w.f.Truncate(n * Size); err == nil {
		err = e
	}
	if e := w.f.Close(); err == nil {
		err = e
	}
	return err
}

// Read returns the valid records of a file written by a Writer, whether or
// not the Writer was closed (a killed worker leaves its file at full size,
// with unwritten records all zero).
func Read(path string) ([]Hold, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Hold
	buf := make([]byte, Size*4096)
	for {
		n, err := io.ReadFull(f, buf)
		for off := 0; off+Size <= n; off += Size {
			r := buf[off : off+Size]
			if binary.NativeEndian.Uint64(r[offMark:]) != mark {
				continue
			}
			gp := binary.NativeEndian.Uint64(r[offG:]) // goroutine and path share a word
			kind := binary.NativeEndian.Uint64(r[offKind:])
			out = append(out, Hold{
				Enter:   int64(binary.NativeEndian.Uint64(r[offEnter:])),
				Exit:    int64(binary.NativeEndian.Uint64(r[offExit:])),
				Token:   int64(binary.NativeEndian.Uint64(r[offToken:])),
				Latency: int64(binary.NativeEndian.Uint64(r[offLatency:])),
				G:       int32(uint32(gp)),
				Path:    int32(uint32(gp >> 32)),
				Lost:    int64(binary.NativeEndian.Uint64(r[offLost:])),
				Kind:    Kind{Shared: kind>>32&1 == 1, Permits: int32(uint32(kind))},
			})
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
