package zklock

import "time"

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

// tellStall calls the handler, if any, with st.
func (b *stallBoard) tellStall(st Stall) {
	if b.onStall != nil {
		b.onStall(st)
	}
}
