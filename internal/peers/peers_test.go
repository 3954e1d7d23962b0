package peers_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/peers"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Both peers are installed (scripts/install-deps.sh brings them), the Java
// one compiles once into the cache directory, and a peer given bad
// arguments says how to call it.
func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Curator's and kazoo's peers, about 4 s")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, kind := range []peers.Kind{peers.Curator, peers.Kazoo} {
		if err := peers.Check(kind); err != nil {
			t.Fatal(err)
		}
		cmd, err := peers.Command(ctx, kind, dir, "no-such-mode")
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "usage") {
			t.Errorf("%s with a bad mode: %v, %q; want a usage message and a failure", kind, err, out)
		}
	}
	class := filepath.Join(dir, "curator", "CuratorPeer.class")
	st, err := os.Stat(class)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peers.Command(ctx, peers.Curator, dir, "x"); err != nil {
		t.Fatal(err)
	}
	if st2, err := os.Stat(class); err != nil || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("the class file was compiled again (%v)", err)
	}
	if err := peers.Check("cobol"); err == nil {
		t.Error("Check of an unknown peer: no error")
	}
}
