package zklock

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/session"
)

// Options of sessions (Connect, NewSession) and of locks (New, NewRWLock,
// NewSemaphore). A few live beside what they configure: WithDigestAuth
// (auth.go), WithPositionHandler (position.go), WithRevocable and
// WithRevocationHandler (revoke.go), WithJuteMaxBuffer (writelink.go),
// WithPersistentPath (protection.go).

// sessionConfig is what the session options fill in: the floor's Config
// (package session), and what only checking it needs.
type sessionConfig struct {
	session.Config
	tlsSet  bool        // WithTLS was given (nil is refused)
	onStall func(Stall) // WithStallHandler (stalled.go); nil: none
}

// SessionOption configures Connect and NewSession.
type SessionOption func(*sessionConfig)

// WithSessionTimeout sets the session timeout asked of the server (default
// 10s; the server bounds it between 2 and 20 ticks unless configured
// otherwise). A crashed holder's lock passes on after about this long.
// The loss bounds derive from the timeout the server granted (under
// NewSession, which asks nothing of the server, the one it granted the
// caller's connection; this one only when that cannot be read).
func WithSessionTimeout(d time.Duration) SessionOption {
	return func(c *sessionConfig) { c.Timeout = d }
}

// WithLogger sends the session's and its locks' logs, and go-zookeeper's
// own (at Debug), to l. Without it the session and its locks log only
// warnings (a lost hold, a server that cannot be reached), to
// slog.Default(); with it, also state changes (Info) and detail (Debug).
// Package tier logs through the session's logger too (Session.Logger).
func WithLogger(l *slog.Logger) SessionOption {
	return func(c *sessionConfig) { c.Logger = l }
}

// WithLossOnExpiryOnly keeps holds through disconnections and through
// short failures to reach the ensemble's leader. A hold then ends when the
// session expires, when its node is deleted, or when nine eighths of the
// session timeout have passed since the latest moment the leader is shown
// to have heard of the session (a local timer, as Curator's session
// connection-state policy has): the server may have expired the session by
// then. From the moment the session's connection reaches a server again
// until that server's answer tells the timeout it grants, the hold stands
// at most nine eighths of the least timeout a member can grant (two ticks
// by ZooKeeper's defaults, as the session's probe reads it, or as
// WithServerTickTime declares it; where neither says, the hold ends as a
// server is reached): the member may grant less than any before it, and
// the leader's expiry follows before the answer can tell. The price is a
// bounded overlap: another process may be granted the lock up to an eighth
// of the session timeout before this holder is told (the argument is in
// zklock/internal/session's lease.go). Use it only together with fencing
// tokens. The default ends every hold on a
// disconnection, and seven eighths of the session timeout after that
// moment, before any other process can be granted the lock.
func WithLossOnExpiryOnly() SessionOption {
	return func(c *sessionConfig) { c.ExpiryOnly = true }
}

// WithStateListener calls fn on every state change, in order, from a
// goroutine of the session's that does nothing else: a slow fn delays only
// later calls of fn, never the detection of a loss. fn should return
// promptly all the same. fn may call the session's Close (Close does not
// wait for it); StateClosed is its last call.
func WithStateListener(fn func(State)) SessionOption {
	return func(c *sessionConfig) {
		c.Listener = nil
		if fn != nil {
			c.Listener = func(st int) { fn(State(st)) }
		}
	}
}

// WithoutPipelining makes every request of the session's locks wait for
// the one before it: an acquisition's listing waits for its create's reply,
// and the session's writes go one per request, never several in a multi
// (the next create on the path waits until the delete is done; Release
// itself still returns at once). It is the baseline the pipelined protocol is
// measured against, and a way out should a go-zookeeper upgrade break the
// assumption pipelining rests on (one request per Write by go-zookeeper, see
// wire.go), which a contract test checks.
func WithoutPipelining() SessionOption {
	return func(c *sessionConfig) { c.NoPipelining = true }
}

// WithDialer makes Connect open its connections with d (for a proxy, or a
// connection that counts what it carries) instead of net.DialTimeout; for
// TLS, see WithTLS, which makes its TLS connection on what d returns. The
// session still observes the bytes it writes (package wire), and writes
// them to d's connection in batches when many of its requests are out:
// one Write may carry several requests. It has no effect under
// NewSession, whose connection exists.
func WithDialer(d zk.Dialer) SessionOption {
	return func(c *sessionConfig) { c.Dialer = d }
}

// WithTLS makes Connect speak TLS with cfg to the servers' secure client
// port (ZooKeeper 3.5+, secureClientPort, served by Netty): give Connect
// those ports. cfg.RootCAs is the CA that signed the servers'
// certificates (nil: the system's); without cfg.ServerName each server's
// certificate is checked against the host Connect was given for it, name
// or IP address. A client certificate in cfg.Certificates (or
// GetClientCertificate) answers a server that asks for one
// (ssl.clientAuth), and with the server's x509 provider
// (authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider)
// it is the session's identity in ACLs: scheme "x509", id the
// certificate's subject, such as zk.ACL{Perms: zk.PermAll, Scheme:
// "x509", ID: "CN=worker,O=example"}. When every server refuses the
// handshake in a way retrying will not change (a certificate this side
// does not trust, or the server refuses this side's, or a port that does
// not speak TLS), Connect fails with that error at once, not at its
// deadline. WithDialer, if given, opens the connection TLS runs on.
// NewSession refuses it: its connection exists.
//
// Authentication: go-zookeeper v1.0.4 speaks no SASL, so a session cannot
// authenticate with Kerberos (GSSAPI) or SASL DIGEST-MD5, and servers that
// require SASL (zookeeper.sessionRequireClientSASLAuth) refuse it. Use an
// x509 identity from a client certificate (above), or the digest scheme
// (WithDigestAuth), in ACLs instead.
func WithTLS(cfg *tls.Config) SessionOption {
	return func(c *sessionConfig) { c.TLS = cfg; c.tlsSet = true }
}

// WithServerTickTime tells the session its servers' tickTime (zoo.cfg's
// tickTime), which a client cannot read. The lease (see the package doc's
// Loss) must know how often the leader hears of the session from the
// follower that serves it: twice a tick. Without this option it takes the
// tick to be half the session timeout the server granted, the most a
// server allows with its default minSessionTimeout, which is always safe
// and renews a held lock's session more often than a known short tick
// needs. A server whose minSessionTimeout is set below two ticks can grant
// less: then this option is needed for loss before grant to hold, and
// Connect warns when the tick it says is more than half the granted
// timeout.
func WithServerTickTime(d time.Duration) SessionOption {
	return func(c *sessionConfig) { c.ServerTick = d }
}

// WithMaxRetryInterval caps the exponential back-off between retries of
// ZooKeeper operations that failed on a connection loss (default 1s).
func WithMaxRetryInterval(d time.Duration) SessionOption {
	return func(c *sessionConfig) { c.MaxRetryWait = d }
}

func buildConfig(opts []SessionOption) (sessionConfig, error) {
	cfg := sessionConfig{Config: session.Config{Timeout: 10 * time.Second, MaxRetryWait: time.Second}}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.Timeout <= 0 || cfg.MaxRetryWait <= 0 || cfg.ServerTick < 0 {
		return cfg, fmt.Errorf("%w: session timeout and retry interval must be positive, a server tickTime not negative", ErrInvalidOption)
	}
	if err := checkDigests(cfg.Digests); err != nil {
		return cfg, err
	}
	if cfg.tlsSet && cfg.TLS == nil {
		return cfg, fmt.Errorf("%w: WithTLS(nil): give a *tls.Config (an empty one trusts the system's CAs)", ErrInvalidOption)
	}
	if err := checkJuteMaxBuffer(cfg.JuteMax); err != nil {
		return cfg, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(minLevel{slog.Default().Handler(), slog.LevelWarn})
	}
	return cfg, nil
}

type lockConfig struct {
	label   string
	recheck time.Duration
	acl     []zk.ACL
	onLost  func(node string, cause error)
	onGone  func(node string, err error) // WithDeleteHandler

	revocable  bool              // WithRevocable
	onRevoked  func(node string) // WithRevocationHandler
	watchNode  bool              // WithNodeWatch
	persistent bool              // WithPersistentPath

	onPosition func(Position) // see position.go
}

// Option configures New.
type Option func(*lockConfig)

// WithLabel adds label to the lock node's data, next to the host name and
// process id, so that an operator listing the queue knows who waits. The
// node's data, label included, may not exceed 64 KiB (New refuses it with
// ErrInvalidOption): a request larger than the server's jute.maxbuffer
// (1 MB by default) makes it drop the connection, and with it the session.
func WithLabel(label string) Option { return func(c *lockConfig) { c.label = label } }

// WithRecheckInterval sets how often a waiter re-reads the queue even when
// its watch has not fired (default 5s). A watch can be lost when a server
// restarts or the client moves to another ensemble member; this bounds how
// long such a loss can delay a waiter.
func WithRecheckInterval(d time.Duration) Option { return func(c *lockConfig) { c.recheck = d } }

// WithACL sets the ACL of the nodes the lock creates (default: world, all):
// its lock nodes, and the lock path and any missing ancestor it creates
// (containers, but see WithPersistentPath). ZooKeeper checks a create or
// delete of a node against its parent's ACL, so it is the lock path's ACL
// that decides who may queue and who may delete a holder's node; a lock
// path that already exists keeps its own. With zk.AuthACL or zk.DigestACL, give the session
// the credentials (WithDigestAuth). See ExampleWithDigestAuth.
func WithACL(acl []zk.ACL) Option { return func(c *lockConfig) { c.acl = acl } }

// WithLossHandler calls fn with the hold's node and the cause (ErrDisconnected,
// ErrSessionExpired, ErrLeaseExpired, ErrNodeDeleted, ErrSessionClosed, or
// ErrClosed when the Lock's Close ended the hold) when a hold is lost, synchronously, at the moment the loss is detected,
// so that work under the lock can be stopped with no goroutine hop in
// between (package tier cancels its held context here). fn may run on
// go-zookeeper's event goroutine, on a goroutine of the session's (the
// lease's deadline, or another hold's question ending them all), or on the
// goroutine that asks a question of the hold and finds the lease's
// deadline passed (Release, Err, Txn, tier's held context: after a stop
// of the process longer than the lease): it must not block, nor call
// methods of the Lock or Session.
func WithLossHandler(fn func(node string, cause error)) Option {
	return func(c *lockConfig) { c.onLost = fn }
}

// WithDeleteHandler calls fn once for every hold of the lock, when the
// delete of its node that its Release or its loss queued has its first
// outcome: err is nil when that delete removed the node; wraps
// zk.ErrNoNode when the node was gone already (deleted by another client,
// or with its session: then it wraps ErrSessionExpired too); is the
// server's refusal (zk.ErrNoAuth, ...) or the error of a request whose
// outcome is unknown (zk.ErrConnectionClosed, ...), the delete going on
// in the background, guaranteed, as always; or is ErrSessionClosed when
// the session closed before the delete was sent. A delete that waits for
// a connection is not reported until it has one, or the session ends.
// It is what package zkcompat needs to keep zk.Lock's Unlock: return once
// the server has answered the delete, and say zk.ErrNoNode when someone
// else deleted the node; Release itself does not wait, so that the delete
// can travel with the session's next create. fn runs on the session's
// writer, or on the goroutine that ends the hold: it must not block, nor
// call methods of the Lock or Session.
func WithDeleteHandler(fn func(node string, err error)) Option {
	return func(c *lockConfig) { c.onGone = fn }
}

// WithNodeWatch makes each hold watch its own node from the grant on,
// instead of once it has lasted a quarter of the session timeout (see
// holdwatch.go): a deletion of the node by someone else (an operator, the
// inspector's break) ends the hold as soon as the server's event arrives.
// With both processes on one server, that event reaches the holder before
// the next node's owner, which must list the queue after its own event,
// can be granted. It costs one data read per hold. Package election sets
// it: a leadership must end before another begins.
func WithNodeWatch() Option { return func(c *lockConfig) { c.watchNode = true } }

// minLevel passes on the records of its level and above: the default
// logger, quiet below warnings.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(attrs), m.min}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{m.Handler.WithGroup(name), m.min}
}

// WithDigestAuth authenticates the session's connection with ZooKeeper's
// digest scheme as user:password before the session's first lock request,
// and again on every reconnect. Nodes created with zk.AuthACL or
// zk.DigestACL(perms, user, password) are then this user's. The user must
// be non-empty and have no colon (ZooKeeper splits at the first one).
// Several WithDigestAuth add several identities.
func WithDigestAuth(user, password string) SessionOption {
	return func(c *sessionConfig) { c.Digests = append(c.Digests, session.Digest{User: user, Password: password}) }
}

func checkDigests(ds []session.Digest) error {
	for _, d := range ds {
		if d.User == "" || strings.Contains(d.User, ":") {
			return fmt.Errorf("%w: digest user %q must be non-empty and have no colon", ErrInvalidOption, d.User)
		}
	}
	return nil
}

// WithJuteMaxBuffer tells the session its servers' jute.maxbuffer, in
// bytes, when it is not ZooKeeper's default (0xfffff, 1 MiB less one
// byte): the server drops the connection of a larger request, and it does
// not tell its clients the value, so a session must be told it, as a Java
// client is by the same property. The session's writer packs its writes
// into requests no larger than it (nor than go-zookeeper's buffer, 1.5
// MiB), and refuses a write that alone is larger before sending it: an
// acquisition whose node's create is (a very large ACL: ErrInvalidOption)
// or a transaction (ErrInvalidOp), each with its size and the limit. At
// least 64 KiB.
func WithJuteMaxBuffer(bytes int) SessionOption {
	return func(c *sessionConfig) { c.JuteMax = bytes }
}

// checkJuteMaxBuffer refuses a jute.maxbuffer below 64 KiB, which a lock
// node's data alone may take: more likely a mistake (a count of KiB) than
// a server's. 0 is the default.
func checkJuteMaxBuffer(n int) error {
	if n != 0 && n < 64<<10 {
		return fmt.Errorf("%w: jute.maxbuffer of %d bytes: at least 65536", ErrInvalidOption, n)
	}
	return nil
}

// WithPositionHandler has Acquire tell fn where its node stands in the
// queue: once when the node is created (from the listing pipelined behind
// the create), then whenever the position read on a later listing differs
// from the last one, the last report of a successful Acquire having Leads
// set. A nil fn reports nothing. TryAcquire, which never waits, reports
// nothing.
//
// Reporting sends no request: the position comes from the listings the
// waiter reads anyway, when its predecessor goes and at each re-check
// (WithRecheckInterval). A waiter far back hears nothing while nodes
// ahead of its predecessor come and go (that is the price of no herd); it
// catches up at its next re-check.
//
// fn runs on the goroutine that called Acquire, which is where the waiter
// reads the queue: one report at a time, in order, and never after Acquire
// returned. A slow fn delays only its own Acquire: the waiter arms its
// watch after fn returns, and a change made meanwhile is seen then (the
// watch's read finds the predecessor gone, or the next listing shows it).
// While it runs, a cancelled ctx is not noticed. fn must not call methods
// of the Lock.
func WithPositionHandler(fn func(Position)) Option {
	return func(c *lockConfig) { c.onPosition = fn }
}

// Stall tells that waits of this session stand behind another session's
// nodes (see WithStallHandler), or that they no longer do.
type Stall struct {
	// Session is the holder's session, whose nodes lead the queues.
	Session int64
	// Holder is what its nodes' creator wrote, as ParticipantID renders it
	// (pid@host and the label, for tierlock's).
	Holder string
	// Locks are the lock paths it stalls here, sorted: at its beginning,
	// those it stalls then; at its end, every one it stalled meanwhile.
	Locks []string
	// Disconnected reports that no server lists the session among its
	// connections (cons): its process may be gone, and its nodes stay
	// until it expires. False at a beginning: the servers did not say (they
	// refuse cons), and the waits have stood behind it for a third of the
	// session timeout.
	Disconnected bool
	// Waited is how long the longest of the waits has stood behind it.
	Waited time.Duration
	// ExpiresWithin bounds when the session expires, unheard: the servers'
	// maxSessionTimeout; 0 when not known.
	ExpiresWithin time.Duration
	// Ended reports the end of the stall: Why says why (its nodes went, it
	// has a connection again, no wait here stands behind it any more).
	Ended bool
	Why   string
}

// WithStallHandler calls fn when waits of the session begin to stand
// behind another session that has no connection to ZooKeeper (a killed
// process's nodes lead their queues until its session expires), once per
// such session for all the locks it stalls, and once when that ends; and
// likewise for waits that stood behind one session for a third of the
// session timeout where the servers do not say who is connected. The
// session logs each at Warn too. fn runs on a goroutine of the session's or
// of a wait, and must return promptly. lockmetrics' StallHandler counts
// them.
func WithStallHandler(fn func(Stall)) SessionOption {
	return func(c *sessionConfig) { c.onStall = fn }
}
