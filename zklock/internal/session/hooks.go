package session

import (
	"time"

	"github.com/tierlock/tierlock/zklock/internal/wire"
)

// Hooks is the floor's one test seam (Config.Hooks): the points where a
// test of this package or of package zklock waits, looks or steers below
// the floor's verbs. It is nil in production; package zklock's options
// never set it (its tests do, through an option of their own), and each
// floor is made with a Hooks of its own. A nil field is no hook.
type Hooks struct {
	// Inside, when not nil, is filled in by the floor as it starts
	// (before Dial, DialConn or Wrap returns) with what a test may reach
	// below its verbs.
	Inside *Inside

	PollEvery time.Duration // Wrap's poll period, busy or idle (poll.go); 0: the library's
	FoldWait  time.Duration // how long a lone delete waits for a create to carry it (writelink.go); 0: the library's
	AuthDelay time.Duration // the credentials' sending delayed so (auth.go)

	// WriterGate runs on the writer before each round, once the floor is
	// connected (writeLink.connected); done is the floor's Done. A test
	// holds the writer there to see what one batch gathers.
	WriterGate func(done <-chan struct{})
	// Handed runs in the writer between a request's Handing and its
	// sending (writeLink.handing): the creates' listings may overtake it.
	Handed func()
	// Applying runs as a connection state is applied (sessionState.apply):
	// before its lock is taken (taken false), and after the state ended
	// holds, before their losses are told (taken true).
	Applying func(taken bool)
	// Woke runs once a proof's new k woke the renewer, before the proof's
	// goroutine goes on (Lease.proved).
	Woke func()
	// Paused runs before each of Retry's pauses, with the error that asked
	// for it (retry.go).
	Paused func(err error)
	// Sending runs as the lister starts sending (lister.run): a test that
	// waits there lets listings queue (Inside.Listings counts them).
	Sending func()
	// OwnAlone, when it answers true, has a batch of one read with a watch
	// go as the session's own (setWatches and multiRead), not GetW
	// (lister.send).
	OwnAlone func() bool
}

// Inside is what a test may reach below a floor's verbs (Hooks.Inside).
type Inside struct {
	Tap      *wire.Tap              // the floor's wire tap; nil under Wrap
	Refresh  func() <-chan struct{} // sends a sync that proves the session, closed once answered (Lease.refresh)
	LastK    func() time.Time       // the write time the lease dates its latest proof by (zero: none)
	Listings func() int             // how many listings wait for the lister
}
