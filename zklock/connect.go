package zklock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/session"
)

// Making a session: Connect, NewSession (the floor below, package
// session, does the work).

// Connect dials the ZooKeeper servers and waits until a session is
// established, its credentials (WithDigestAuth) are accepted and its
// chroot is found, or ctx ends; when ctx has no deadline, for at most
// ConnectTimeout. Failing, it returns ctx's error with the last dial
// error, such as "connection refused".
//
// servers are read as the Java client, Curator's connectString and kazoo
// read theirs: each entry host:port (a missing port means 2181) or a
// comma-separated list of them, and the last may end with a chroot,
// "zk1:2181,zk2:2181/myapp" (or an entry may be the chroot alone,
// "/myapp", as kazoo's lists allow). With a chroot, every path the session
// names lives under it on the server, and every path it is told comes
// without it: the locks' and recipes' paths, and those of requests made
// through Session.Conn (runonce's roots, election, the inspector), which
// go through the same connection. The chroot node must exist: Connect
// checks it (one request) and fails with zk.ErrNoNode if it does not,
// since nothing could be locked under it, and creating it would make a
// mistyped chroot a new, empty tree in which this process locks alone.
// A chroot of "/" ("zk1:2181/") is none, as the Java client, Curator and
// kazoo read it. An empty address is refused with ErrEmptyServerAddress, a
// chroot that is not a valid path with ErrInvalidChroot.
//
// The connection is TLS with WithTLS, and authenticated by digest
// credentials (WithDigestAuth) or, over TLS, by a client certificate (an
// x509 identity); go-zookeeper has no SASL, so no Kerberos (see WithTLS).
func Connect(ctx context.Context, servers []string, opts ...SessionOption) (*Session, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	servers, chroot, err := parseServers(servers)
	if err != nil {
		return nil, err
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ConnectTimeout)
		defer cancel()
	}
	f, err := session.Dial(ctx, servers, chroot, cfg.Config)
	if err != nil {
		return nil, err
	}
	return newSession(f, servers, cfg), nil
}

// ConnectTimeout bounds a Connect whose context has no deadline: a server
// that cannot be reached makes it fail after this long, with the last dial
// error in its error, instead of waiting for ever.
const ConnectTimeout = 10 * time.Second

// NewSession wraps a connection the caller already has; Close leaves conn
// open. Since the callback that go-zookeeper calls for every event can only
// be installed by zk.Connect, such a session learns its state by polling
// conn.State and conn.SessionID every few milliseconds, and by reading
// events, which may be nil (it then must not be read by anyone else: the
// session drains it). Requests are not pipelined (that needs the dialer
// Connect installs), so prefer Connect. The loss bounds are derived from
// the timeout the server granted, read from the connection, or from
// WithSessionTimeout when that cannot be read. No tap sees go-zookeeper's
// pings either, so the session syncs every quarter of its timeout, a
// little more often than go-zookeeper pings, to show the leader hears of
// it (see the package doc's Loss). When the caller closes
// conn, the session is over: waits on it end with ErrSessionClosed and
// holds are told they are lost. Credentials (WithDigestAuth) are sent in
// the background; the session's lock requests wait for them, and fail
// with their error. There is no chroot under NewSession: a connection
// whose server address carries one ("zk1:2181/myapp", which zk.Connect
// dials as the port "2181/myapp") is refused with ErrInvalidChroot, and
// so is WithTLS, since the connection exists.
func NewSession(conn *zk.Conn, events <-chan zk.Event, opts ...SessionOption) (*Session, error) {
	if conn == nil {
		return nil, fmt.Errorf("%w: a connection is required", ErrNilSession)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		return nil, fmt.Errorf("%w: WithTLS under NewSession: the connection exists (dial it with TLS: zk.WithDialer)", ErrInvalidOption)
	}
	if root := dialedChroot(conn); root != "" {
		return nil, fmt.Errorf("%w: NewSession on a connection to %q: go-zookeeper takes no chroot (it dials the port after the colon, chroot included, and never connects): use Connect, which takes %s", ErrInvalidChroot, conn.Server(), root)
	}
	f, err := session.Wrap(conn, events, cfg.Config)
	if err != nil {
		return nil, err
	}
	return newSession(f, nil, cfg), nil
}

// Dial makes a session over a new connection and returns it as
// zk.Connect returns a connection: at once, go-zookeeper connecting in the
// background (requests made meanwhile wait for the session, or fail with
// zk.ErrNoServer as zk.Connect's do), with go-zookeeper's event channel,
// which the session does not read (six slots, dropped when full, as
// zk.Connect's). It is for code that keeps a *zk.Conn of its own, the
// drop-in's zkcompat.Connect: the session's Conn is that connection, the
// caller's Close of it ends the session (waits end with ErrSessionClosed,
// holds are told lost), and Session.Close leaves it open. Unlike
// NewSession, the session dials through its own tap: it sees the
// handshake, so a first lock on the connection waits for no chain of
// proofs across the servers' tick, and its requests are pipelined.
//
// servers are read as Connect reads them (a chroot too, not checked:
// Dial does not wait). zkOpts are go-zookeeper's options (zk.WithLogger,
// zk.WithMaxBufferSize, ...), applied before the session's own dialer,
// host provider and event callback, which they cannot replace.
// WithDigestAuth is refused with ErrInvalidOption: add credentials with
// the connection's AddAuth, as for zk.Connect's.
func Dial(servers []string, zkOpts []func(*zk.Conn), opts ...SessionOption) (*Session, <-chan zk.Event, error) {
	servers, chroot, err := parseServers(servers)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, nil, err
	}
	if len(cfg.Digests) > 0 {
		return nil, nil, fmt.Errorf("%w: WithDigestAuth under Dial: add credentials with the connection's AddAuth", ErrInvalidOption)
	}
	f, events, err := session.DialConn(servers, chroot, cfg.Config, zkOpts)
	if err != nil {
		return nil, nil, err
	}
	return newSession(f, servers, cfg), events, nil
}

// dialedChroot returns the chroot in the address conn dials, if any.
// go-zookeeper picks its first server a moment after zk.Connect returns:
// NewSession waits for it, briefly.
func dialedChroot(conn *zk.Conn) string {
	for deadline := time.Now().Add(100 * time.Millisecond); conn.Server() == "" && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if _, root, ok := strings.Cut(conn.Server(), "/"); ok {
		return "/" + root
	}
	return ""
}

// ErrEmptyServerAddress reports an empty address in Connect's server
// list: an empty entry, or an empty one between commas (a trailing or
// doubled comma, a variable that was not set). It is one of the
// ErrInvalidOption family: errors.Is matches both.
var ErrEmptyServerAddress error = invalidServers("zklock: empty server address")

// ErrInvalidChroot reports a chroot in Connect's server list that is not
// a valid absolute path below the root, or two different ones. It is one
// of the ErrInvalidOption family: errors.Is matches both.
var ErrInvalidChroot error = invalidServers("zklock: invalid chroot")

// invalidServers is a refusal of Connect's server list that says what is
// wrong with it, and matches ErrInvalidOption, which callers checked
// before it had a name of its own.
type invalidServers string

func (e invalidServers) Error() string { return string(e) }

// Is reports whether target is ErrInvalidOption.
func (e invalidServers) Is(target error) bool { return target == ErrInvalidOption }

// parseServers reads Connect's server list as the Java client, Curator's
// connectString and kazoo read theirs: each entry host:port (a missing
// port means ZooKeeper's 2181) or a comma-separated list of them, the
// last with an optional chroot, "host:port,host:port/myapp" ("/": none);
// an entry may also be the chroot alone, "/myapp" (kazoo's list form).
// Addresses are trimmed; an empty one, an empty list, an invalid chroot or
// two different chroots are refused.
func parseServers(servers []string) (addrs []string, chroot string, err error) {
	for _, entry := range servers {
		for _, a := range strings.Split(entry, ",") {
			a = strings.TrimSpace(a)
			host, root, hasRoot := strings.Cut(a, "/")
			if hasRoot {
				if chroot, err = takeChroot(chroot, "/"+root, entry); err != nil {
					return nil, "", err
				}
			}
			switch {
			case host != "":
				addrs = append(addrs, host)
			case !hasRoot: // a chroot alone names no server, and is no empty address
				return nil, "", fmt.Errorf("%w in %q (a trailing or doubled comma, or an unset variable?)", ErrEmptyServerAddress, servers)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, "", fmt.Errorf("%w: no servers", ErrInvalidOption)
	}
	if chroot == "/" { // the root: no chroot
		chroot = ""
	}
	return addrs, chroot, nil
}

// takeChroot checks root, named in entry, and returns it, or an error if
// it is invalid or differs from seen (the one named before, if any). "/"
// is the root itself, no chroot, as the Java client, Curator and kazoo
// read "host:2181/".
func takeChroot(seen, root, entry string) (string, error) {
	if root != "/" {
		if err := ValidatePath(root); err != nil {
			why := strings.TrimPrefix(err.Error(), ErrInvalidPath.Error()+": ")
			return "", fmt.Errorf("%w: %q in %q: %s", ErrInvalidChroot, root, entry, why)
		}
	}
	if seen != "" && seen != root {
		return "", fmt.Errorf("%w: two chroots in one server list, %s and %s", ErrInvalidChroot, chrootName(seen), chrootName(root))
	}
	return root, nil
}

// chrootName is root as an error names it.
func chrootName(root string) string {
	if root == "/" {
		return "/ (none)"
	}
	return root
}
