package session

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"
)

// Config is what a floor is made with: package zklock's session options
// fill it in, with their defaults, and check it.
type Config struct {
	Timeout      time.Duration // the session timeout asked of the server
	ServerTick   time.Duration // the servers' tickTime, when declared (lease.go); 0: at most half the timeout
	Logger       *slog.Logger  // never nil
	ExpiryOnly   bool          // holds survive disconnections (lease.go)
	Listener     func(int)     // told every state change, one of the States (notify.go); nil: none
	MaxRetryWait time.Duration // the cap of every back-off (retry.go)
	NoPipelining bool          // every request waits for the one before
	Digests      []Digest      // credentials (auth.go)
	JuteMax      int           // the servers' jute.maxbuffer; 0: ZooKeeper's default
	Dialer       zk.Dialer     // nil: net.DialTimeout
	TLS          *tls.Config   // nil: plaintext
	Hooks        *Hooks        // the test seam (hooks.go); nil in production
}

// Digest is one digest credential, user:password.
type Digest struct{ User, Password string }

// zkLogger routes go-zookeeper's log lines to slog.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
}
