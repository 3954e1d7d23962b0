package session

import (
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/go-zookeeper/zk"
)

// What a session made by Wrap must know of the caller's connection
// and go-zookeeper v1.0.4 keeps unexported. Both are read by reflection
// from fields whose names and types TestConnInternals pins, so that an
// upgrade that renames them fails the suite instead of silently weakening
// the loss bounds.
//
//   - sessionTimeoutMs, the timeout the server granted: the lease's bounds
//     must derive from it (lease.go), and the server may grant less than
//     was asked (it clamps to 2..20 ticks unless configured otherwise).
//     go-zookeeper writes it, unguarded, in authenticate, between its
//     connect's turn of serverMu and its atomic store of StateHasSession.
//     GrantedTimeout reads it holding serverMu, and only when it loads
//     StateHasSession there: that load orders the last write before the
//     read, and the next connection's write waits behind the mutex, so it
//     comes after the read. A read without the mutex, at each of the
//     floor's polls, raced that next write (the race detector, make test
//     run 72); a read only as the floor saw a new state missed a
//     reconnection that fell between two polls (the lease explorer, CI,
//     seed 6288).
//   - serverMu, the mutex that orders those two.
//   - shouldQuit, closed by Conn.Close: the one sign that the connection is
//     closed for good rather than reconnecting (both fail requests with
//     ErrConnectionClosed). It is made in zk.Connect and never replaced.

// GrantedTimeout returns the session timeout the server granted to conn,
// or 0 when it cannot be read or conn has no session.
func GrantedTimeout(conn *zk.Conn) time.Duration {
	f := connField(conn, "sessionTimeoutMs", reflect.Int32)
	m := connField(conn, "serverMu", reflect.Struct)
	if !f.IsValid() || !m.IsValid() || m.Type() != reflect.TypeFor[sync.Mutex]() {
		return 0
	}
	mu := (*sync.Mutex)(unsafe.Pointer(m.UnsafeAddr()))
	mu.Lock()
	defer mu.Unlock()
	if conn.State() != zk.StateHasSession {
		return 0
	}
	return time.Duration(f.Int()) * time.Millisecond
}

// ConnQuit returns the channel conn's Close closes, or nil when it cannot
// be read.
func ConnQuit(conn *zk.Conn) <-chan struct{} {
	f := connField(conn, "shouldQuit", reflect.Chan)
	if !f.IsValid() || f.Type() != reflect.TypeFor[chan struct{}]() {
		return nil
	}
	return *(*chan struct{})(unsafe.Pointer(f.UnsafeAddr()))
}

func connField(conn *zk.Conn, name string, kind reflect.Kind) reflect.Value {
	if conn == nil {
		return reflect.Value{}
	}
	f := reflect.ValueOf(conn).Elem().FieldByName(name)
	if !f.IsValid() || f.Kind() != kind {
		return reflect.Value{}
	}
	return f
}

// connGranted returns the session timeout the server granted to a
// floor's connection under Wrap, conn (zc, go-zookeeper's, once known):
// read from go-zookeeper's, or told by a connection that says it (the
// lease explorer's double).
func connGranted(conn Conn, zc *zk.Conn) time.Duration {
	if c, ok := conn.(interface{ GrantedTimeout() time.Duration }); ok {
		return c.GrantedTimeout()
	}
	return GrantedTimeout(zc)
}

// Conn is what the floor asks of its go-zookeeper connection: *zk.Conn
// has it all. The lease's explorer drives the floor through a double.
type Conn interface {
	SessionID() int64
	State() zk.State
	Sync(path string) (string, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Delete(path string, version int32) error
	Multi(ops ...any) ([]zk.MultiResponse, error)
	Exists(path string) (bool, *zk.Stat, error)
	AddAuth(scheme string, auth []byte) error
	Close()
}
