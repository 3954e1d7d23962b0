package main

import (
	"net"
	"testing"

	"github.com/tierlock/tierlock/internal/zktest"
)

// Bad input gets a clear message and its documented exit code, never a
// panic, and usage errors are found before connecting.
func TestBadInput(t *testing.T) {
	missing := zktest.Path(t)
	cases := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no subcommand", nil, exitUsage, "usage: tierlock SUBCOMMAND"},
		{"unknown subcommand", []string{"frob", "/x"}, exitUsage, `unknown subcommand "frob"`},
		{"help", []string{"help"}, exitOK, "exit codes"},
		{"subcommand help", []string{"ls", "-h"}, exitOK, "-digest"},
		{"missing argument", []string{"ls"}, exitUsage, "missing ROOT|PATH"},
		{"two arguments", []string{"watch", "/a", "/b"}, exitUsage, "one argument expected"},
		{"relative path", []string{"ls", "locks/a"}, exitUsage, "must be absolute"},
		{"trailing slash", []string{"revoke", "/locks/a/"}, exitUsage, "ends with a slash"},
		{"reserved path", []string{"watch", "/zookeeper/quota"}, exitUsage, "reserved"},
		{"bad character", []string{"ls", "/a\x00b"}, exitUsage, "not allowed"},
		{"watch of a lock node", []string{"watch", "/locks/a/_c_0-lock-0000000001"}, exitUsage, "wants its lock path, /locks/a"},
		{"ls of a lock node", []string{"ls", "/locks/a/x__rlock__0000000001"}, exitUsage, "is a lock node"},
		{"watch of the root", []string{"watch", "/"}, exitUsage, "root cannot be a lock"},
		{"unknown flag", []string{"ls", "-bogus", "/x"}, exitUsage, "flag provided but not defined"},
		{"flag of another subcommand", []string{"ls", "-yes", "/x"}, exitUsage, "flag provided but not defined"},
		{"digest without colon", []string{"ls", "-digest", "fleet", "/x"}, exitUsage, "user:password"},
		{"digest without user", []string{"ls", "-digest", ":pw", "/x"}, exitUsage, "user:password"},
		{"no server", []string{"ls", "-zk", " , ", "/x"}, exitUsage, "names no server"},
		{"bad timeout", []string{"ls", "-timeout", "0s", "/x"}, exitUsage, "-timeout"},
		{"negative count", []string{"watch", "-count", "-1", "/x"}, exitUsage, "-count"},
		{"break without -yes", []string{"break", "-zk", "127.0.0.1:1", "/x"}, exitUsage, "add -yes"},
		{"missing root", []string{"ls", missing}, exitNoNode, "node does not exist"},
		{"missing lock path", []string{"break", "-yes", missing}, exitNoNode, "nobody holds it"},
		{"unreachable server", []string{"ls", "-zk", deadAddr(t), "-timeout", "300ms", "/x"}, exitUnreachable, "cannot reach ZooKeeper"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tierlock(t, c.args...).want(t, c.code, c.says)
		})
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
