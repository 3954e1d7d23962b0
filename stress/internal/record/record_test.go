package record

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tierlock/tierlock/internal/exclusion"
)

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.bin")
	w, err := Create(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				s, err := w.Enter(exclusion.Now(), int64(i+1), 5, int32(g), int32(i%3))
				if err != nil {
					t.Error(err)
					return
				}
				if g == 3 && i == 99 {
					continue // entered, never left
				}
				s.Exit(exclusion.Now())
			}
		}()
	}
	wg.Wait()
	// Read before Close sees the full-size file, as after a SIGKILL.
	holds, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(holds) != 400 {
		t.Fatalf("read %d holds before close, want 400", len(holds))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Size() != 400*Size {
		t.Fatalf("file size %d after close, want %d", st.Size(), 400*Size)
	}
	holds, err = Read(path)
	if err != nil {
		t.Fatal(err)
	}
	open := 0
	for _, h := range holds {
		if h.Exit == 0 {
			open++
			if h.G != 3 || h.Path != 99%3 || h.Token != 100 {
				t.Errorf("open hold %+v", h)
			}
			continue
		}
		if h.Exit < h.Enter || h.Latency != 5 || h.G < 0 || h.G > 3 || h.Path > 2 {
			t.Errorf("bad hold %+v", h)
		}
	}
	if open != 1 {
		t.Fatalf("%d holds without exit, want 1", open)
	}
}

func TestFull(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "r.bin"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Enter(1, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Enter(2, 0, 0, 0, 0); err != ErrFull {
		t.Fatalf("second record in a file of one: %v, want ErrFull", err)
	}
}

func TestKinds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.bin")
	w, err := Create(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []Kind{{}, {Shared: true}, {Permits: 3}, {Shared: true, Permits: 1 << 30}}
	for i, k := range kinds {
		s, err := w.EnterKind(int64(i+1), 0, 0, int32(i), 0, k)
		if err != nil {
			t.Fatal(err)
		}
		s.Exit(int64(i + 2))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	holds, err := Read(path)
	if err != nil || len(holds) != 4 {
		t.Fatalf("%d holds, %v", len(holds), err)
	}
	for _, h := range holds {
		if h.Kind != kinds[h.G] {
			t.Errorf("hold %d: kind %+v, want %+v", h.G, h.Kind, kinds[h.G])
		}
	}
}
