package tier

import (
	"context"
	"errors"
	"testing"
)

// fakeKeyed is a keyedLock whose Release fails as the test says.
type fakeKeyed struct {
	releaseErr error
	closed     bool
}

func (f *fakeKeyed) Release(context.Context) error                           { return f.releaseErr }
func (f *fakeKeyed) Token(context.Context) (int64, error)                    { return 1, nil }
func (f *fakeKeyed) HoldCount(context.Context) int                           { return 1 }
func (f *fakeKeyed) Close() error                                            { f.closed = true; return nil }
func (f *fakeKeyed) take(ctx context.Context) (context.Context, bool, error) { return ctx, true, nil }

// A Release that ended the hold but failed otherwise than by a loss (a
// failed delete, say) still drops the registry's reference, so the key's
// lock is closed and forgotten (issue 29, item 5: before, only nil and
// ErrLockLost did, and the entry leaked for the session's life). A Release
// that released nothing (ErrNotHolder) keeps it.
func TestRegistryReleaseDropsEntryOnAnyRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kept bool
	}{
		{"released", nil, false},
		{"lost", ErrLockLost, false},
		{"failed delete", errors.New("release /x: zk: connection closed"), false},
		{"not the holder", ErrNotHolder, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeKeyed{releaseErr: tc.err}
			var r registry[*fakeKeyed]
			r.k.m = map[string]*keyedEntry[*fakeKeyed]{}
			r.k.mk = func(string) (*fakeKeyed, error) { return f, nil }
			ctx := context.Background()
			held, _, err := r.acquire(ctx, "job", func(f *fakeKeyed) (context.Context, bool, error) { return f.take(ctx) })
			if err != nil {
				t.Fatal(err)
			}
			if err := r.release(held); !errors.Is(err, tc.err) {
				t.Fatalf("release = %v, want %v", err, tc.err)
			}
			if kept := r.k.len() == 1; kept != tc.kept || f.closed == tc.kept {
				t.Fatalf("entry kept %v, lock closed %v; want kept %v", kept, f.closed, tc.kept)
			}
		})
	}
}
