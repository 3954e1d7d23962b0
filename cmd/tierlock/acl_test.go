package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

const fleetUser, fleetPassword = zktest.FleetUser, zktest.FleetPassword

// Under the fleet's ACL the inspector reads without credentials, but its
// break and revoke are refused (exit 4) and change nothing until it is
// given them with -digest (or $TIERLOCK_DIGEST); wrong ones are refused
// too.
func TestInspectorUnderACL(t *testing.T) {
	s := connect(t, zklock.WithDigestAuth(fleetUser, fleetPassword))
	acl := zktest.FleetACL()
	root := zktest.ACLRoot(t, s.Conn(), acl)
	ctx := zktest.Context(t, 30*time.Second)
	p := root + "/job"
	l := acquire(t, ctx, newLock(t, s, p, zklock.WithACL(acl)))
	tierlock(t, "ls", root).want(t, exitOK, "1 lock, 1 held, 0 processes waiting")
	tierlock(t, "break", "-yes", p).want(t, exitNoAuth, "not authenticated", "-digest user:password")
	tierlock(t, "break", "-yes", "-digest", fleetUser+":wrong", p).want(t, exitNoAuth)
	tierlock(t, "revoke", l.Node()).want(t, exitNoAuth)
	if data, _, err := s.Conn().Get(l.Node()); err != nil || string(data) == revokeMessage {
		t.Fatalf("refused revoke changed the node: %q %v", data, err)
	}
	select {
	case <-l.Lost():
		t.Fatalf("refused break ended the hold: %v", l.Err())
	default:
	}
	t.Setenv("TIERLOCK_DIGEST", fleetUser+":"+fleetPassword)
	tierlock(t, "revoke", p).want(t, exitOK)
	tierlock(t, "break", "-yes", "-digest", fleetUser+":"+fleetPassword, p).want(t, exitOK, "deleted "+l.Node())
	<-l.Lost()
}

// The built binary: exit codes reach the shell, output reaches stdout.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the command, about 2 s")
	}
	bin := filepath.Join(t.TempDir(), "tierlock")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	p := zktest.Path(t)
	l := acquire(t, zktest.Context(t, 10*time.Second), newLock(t, connect(t), p))
	cmd := exec.Command(bin, "ls", "-json", p)
	cmd.Env = append(os.Environ(), "TIERLOCK_ZK_SERVERS="+strings.Join(zktest.Servers(t), ","))
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"node":"`+l.Node()+`"`) {
		t.Fatalf("ls: %v\n%s", err, out)
	}
	err = exec.Command(bin, "frob").Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
		t.Fatalf("unknown subcommand: %v, want exit %d", err, exitUsage)
	}
}
