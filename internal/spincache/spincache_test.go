package spincache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A run is read back only for the same files' contents and args; a
// failed run is not kept; off runs every time.
func TestOutput(t *testing.T) {
	t.Setenv(Env, t.TempDir())
	dir := t.TempDir()
	model := filepath.Join(dir, "m.pml")
	if err := os.WriteFile(model, []byte("init {}"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := 0
	output := func(args []string, out string, err error) (string, bool, error) {
		t.Helper()
		got, cached, gotErr := Output(dir, []string{"m.pml"}, args, func() ([]byte, error) {
			runs++
			return []byte(out), err
		})
		return string(got), cached, gotErr
	}
	step := func(what string, args []string, out string, wantOut string, wantCached bool, wantRuns int) {
		t.Helper()
		got, cached, err := output(args, out, nil)
		if err != nil || got != wantOut || cached != wantCached || runs != wantRuns {
			t.Fatalf("%s: %q, cached %v, err %v, %d runs; want %q, cached %v, %d runs", what, got, cached, err, runs, wantOut, wantCached, wantRuns)
		}
	}
	step("the first run", []string{"-a"}, "errors: 0", "errors: 0", false, 1)
	step("the same run again", []string{"-a"}, "not run", "errors: 0", true, 1)
	step("other args", []string{"-a", "-DF=1"}, "errors: 1", "errors: 1", false, 2)
	if err := os.WriteFile(model, []byte("init { skip }"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("the model changed", []string{"-a"}, "errors: 2", "errors: 2", false, 3)

	boom := errors.New("pan died")
	if _, _, err := output([]string{"-b"}, "partial", boom); !errors.Is(err, boom) {
		t.Fatalf("a failed run: %v, want %v", err, boom)
	}
	step("after a failed run", []string{"-b"}, "whole", "whole", false, 5)

	t.Setenv(Env, "off")
	step("off", []string{"-a"}, "fresh", "fresh", false, 6)
}
