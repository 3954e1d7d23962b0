package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The server list takes the forms of the Java client's, Curator's and
// kazoo's connection strings, "/" after a server (no chroot) among them.
func TestServerListForms(t *testing.T) {
	for _, c := range []struct {
		in     []string
		addrs  string
		chroot string
	}{
		{[]string{"zk1:2181", " zk2 "}, "[zk1:2181 zk2]", ""},
		{[]string{"zk1:2181,zk2:2181/myapp"}, "[zk1:2181 zk2:2181]", "/myapp"},
		{[]string{"zk1:2181", "zk2:2181/my/app"}, "[zk1:2181 zk2:2181]", "/my/app"},
		{[]string{"zk1:2181/myapp", "zk2:2181/myapp"}, "[zk1:2181 zk2:2181]", "/myapp"},
		{[]string{"zk1:2181", "zk2:2181", "/myapp"}, "[zk1:2181 zk2:2181]", "/myapp"}, // kazoo's list form
		{[]string{"[::1]:2181/myapp"}, "[[::1]:2181]", "/myapp"},
		// "/" is no chroot, as the Java client, Curator and kazoo read it
		// (issue 55, item 7: it was refused as invalid).
		{[]string{"zk1:2181/"}, "[zk1:2181]", ""},
		{[]string{"zk1:2181,zk2:2181/"}, "[zk1:2181 zk2:2181]", ""},
		{[]string{"zk1:2181/", "zk2:2181/"}, "[zk1:2181 zk2:2181]", ""},
		{[]string{"zk1:2181", "/"}, "[zk1:2181]", ""},
	} {
		addrs, chroot, err := zklock.ParseServers(c.in)
		if err != nil || fmt.Sprint(addrs) != c.addrs || chroot != c.chroot {
			t.Errorf("%q: %q, %q, %v; want %s, %q", c.in, addrs, chroot, err, c.addrs, c.chroot)
		}
	}
}

// A bad server list is refused before anything is dialed, with an error
// that names what is wrong: an empty address is "empty server address"
// (not "invalid option", as before), a chroot that is not a node below
// the root or two chroots (one of them "/", none, and another) ErrInvalidChroot; both still match
// ErrInvalidOption, which callers checked before.
func TestBadServerListRefused(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want error
		says string
	}{
		{[]string{"127.0.0.1:2181", ""}, zklock.ErrEmptyServerAddress, "zklock: empty server address in"},
		{[]string{"127.0.0.1:2181,"}, zklock.ErrEmptyServerAddress, "zklock: empty server address in"},
		{[]string{" ,127.0.0.1:2181"}, zklock.ErrEmptyServerAddress, "zklock: empty server address in"},
		{[]string{"zk1:2181/a", "zk2:2181/"}, zklock.ErrInvalidChroot, "two chroots in one server list, /a and / (none)"},
		{[]string{"zk1:2181/", "zk2:2181/a"}, zklock.ErrInvalidChroot, "two chroots in one server list, / (none) and /a"},
		{[]string{"127.0.0.1:2181/myapp/"}, zklock.ErrInvalidChroot, "ends with a slash"},
		{[]string{"127.0.0.1:2181/my//app"}, zklock.ErrInvalidChroot, "zklock: invalid chroot"},
		{[]string{"127.0.0.1:2181/zookeeper"}, zklock.ErrInvalidChroot, "reserved"},
		{[]string{"zk1:2181/a", "zk2:2181/b"}, zklock.ErrInvalidChroot, "two chroots in one server list, /a and /b"},
		{[]string{"/myapp"}, zklock.ErrInvalidOption, "no servers"},
	} {
		start := time.Now()
		_, err := zklock.Connect(context.Background(), c.in)
		if !errors.Is(err, c.want) || !errors.Is(err, zklock.ErrInvalidOption) || !strings.Contains(fmt.Sprint(err), c.says) {
			t.Errorf("Connect(%q) = %v after %v; want %v saying %q", c.in, err, time.Since(start).Round(time.Millisecond), c.want, c.says)
		}
	}
}

// NewSession has no chroot: a go-zookeeper connection given one (which it
// dials as the port "2181/myapp", for ever) is refused, not waited on.
func TestNewSessionRefusesAChroot(t *testing.T) {
	conn, events, err := zk.Connect([]string{zktest.Servers(t)[0] + "/myapp"}, 4*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		for range events {
		}
	}()
	s, err := zklock.NewSession(conn, nil, zklock.WithLogger(zktest.QuietLog))
	if err == nil {
		s.Close()
		t.Fatal("NewSession took a connection whose address has a chroot")
	}
	if !errors.Is(err, zklock.ErrInvalidChroot) {
		t.Fatalf("err = %v, want ErrInvalidChroot", err)
	}
	t.Log(err)
}
