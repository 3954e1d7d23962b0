package main

import (
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
)

// A chroot that does not exist: the inspector (exit 5) and the library
// say to create it with `tierlock create`, which does, with its missing
// parents, so that the same -zk then works; again, it says it exists. A
// PATH below the chroot is made too. With -digest the znodes are the
// identity's, the world may read. On e876833 there was no create (exit 2,
// "unknown subcommand"), and the error said `zkCli.sh create`, which
// Debian's package keeps off PATH.
func TestCreateMakesTheChroot(t *testing.T) {
	chroot := zktest.Path(t) + "/app"
	server := zktest.Servers(t)[0]
	tierlock(t, "ls", "-zk", server+chroot, "/").want(t, exitNoNode, "tierlock create -zk "+server+chroot)
	tierlock(t, "create", "-zk", server+chroot).want(t, exitOK, "created "+chroot)
	tierlock(t, "ls", "-zk", server+chroot, "/").want(t, exitOK, "no locks under /")
	tierlock(t, "create", "-zk", server+chroot).want(t, exitOK, chroot+" exists")
	tierlock(t, "create", "-zk", server+chroot, "/locks/jobs").want(t, exitOK, "created "+chroot+"/locks/jobs")
	tierlock(t, "create", "-json", "-zk", server, chroot+"/locks").want(t, exitOK, `{"path":"`+chroot+`/locks","created":false}`)
	tierlock(t, "create", "-zk", server).want(t, exitUsage, "nothing to create")
	tierlock(t, "create", "-zk", server, "/a", "/b").want(t, exitUsage, "one argument expected")

	s := connect(t)
	tierlock(t, "create", "-zk", server, "-digest", "fleet:secret", chroot+"/fleet").want(t, exitOK, "created "+chroot+"/fleet")
	acl, _, err := s.Conn().GetACL(chroot + "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	// The server masks the digest's hash in getAcl's answer (fleet:x):
	// the user is what it shows.
	if len(acl) != 2 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "fleet:") || acl[0].Perms != zk.PermAll ||
		acl[1] != zk.WorldACL(zk.PermRead)[0] {
		t.Errorf("with -digest: ACL %v, want all for digest fleet:…, read for the world", acl)
	}
}

// The help, and each subcommand's -h, names the flags for TLS and for a
// chroot, and the subcommand that creates a chroot.
func TestHelpNamesTLSAndChroot(t *testing.T) {
	tierlock(t, "help").want(t, exitOK, "-zk host:port,...[/chroot]", "-tls -tls-ca FILE -tls-cert FILE -tls-key FILE -tls-server-name NAME", "create")
	for _, sc := range order {
		tierlock(t, sc, "-h").want(t, exitOK, "-tls-ca", "-tls-cert", "-tls-key", "-tls-server-name", "-tls\n", "host:port,host:port/myapp")
	}
}
