package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/tierlock/tierlock/internal/zktest"
)

// The program runs against one real ZooKeeper shared by the package's
// tests; goleak checks that it leaves no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(zktest.Wrap(m)) }

// While the program holds, a client without the credentials reads the
// queue but cannot delete the holder's node nor queue one of its own.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := zktest.Path(t) + "/jobs/report"
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-zk", strings.Join(zktest.Servers(t), ","), "-path", path,
			"-password", zktest.FleetPassword, "-for", "20s"}, &out)
	}()
	zktest.Eventually(t, 20*time.Second, "the hold", func() bool { return strings.Contains(out.String(), "holding") })

	stranger, _, err := zk.Connect(zktest.Servers(t), 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	kids, _, err := stranger.Children(path)
	if err != nil || len(kids) != 1 {
		t.Fatalf("stranger's listing: %v %v", kids, err)
	}
	if err := stranger.Delete(path+"/"+kids[0], -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("stranger's delete: %v, want ErrNoAuth", err)
	}
	if _, err := stranger.Create(path+"/_c_x-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("stranger's create: %v, want ErrNoAuth", err)
	}
	cancel() // as Ctrl-C does
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "released") {
		t.Errorf("output:\n%s", out.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
