package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Digest credentials. ZooKeeper keeps authentication per connection, not
// per session: a client that reconnects, even into the same session, is
// anonymous on the new connection until it sends its credentials again.
// go-zookeeper v1.0.4 remembers every AddAuth that succeeded and re-sends
// them on each new connection before its send loop starts (conn.go,
// resendZkAuth), so requests queued across a reconnect always go out
// after the credentials. What it does not cover is the first AddAuth
// itself, which this file does: the credentials are in place before the
// session's first lock request (see AwaitAuth), and an AddAuth whose reply
// a reconnect raced is sent again (see addDigest).
//
// The digest scheme never fails to authenticate: the server only derives
// an identity from user:password. Wrong credentials are therefore not an
// error here but a different identity, which the ACLs then refuse
// (zk.ErrNoAuth on the request). zk.ErrAuthFailed comes from other schemes.

// openAuth makes the floor's gate (authGate, floor.go): open at once when
// there are no credentials to send.
func (s *Floor) openAuth() {
	s.auth.done = make(chan struct{})
	if len(s.cfg.Digests) == 0 {
		close(s.auth.done)
	}
}

// AwaitAuth waits until the session's credentials are in place: every
// request that creates, deletes or reads lock nodes goes after it (the
// requests Flight.Admit admits wait there). It returns the auth's
// failure, or ctx's error.
func (s *Floor) AwaitAuth(ctx context.Context) error {
	return s.auth.wait(ctx, s.life.ctx.Done())
}

// authenticate sends every credential of the session and opens the gate.
// Dial runs it before returning; Wrap in the background.
func (s *Floor) authenticate(ctx context.Context) error {
	if h := s.cfg.Hooks; h != nil && h.AuthDelay > 0 {
		select { // a test's delay of the credentials
		case <-time.After(h.AuthDelay):
		case <-ctx.Done():
		}
	}
	var err error
	for _, d := range s.cfg.Digests {
		if err = s.addDigest(ctx, d); err != nil {
			break
		}
	}
	s.auth.err = err
	close(s.auth.done)
	return err
}

// addDigest sends one credential until the server has taken it on the
// connection that go-zookeeper's re-send will cover. go-zookeeper records
// a credential only after its reply arrives: were the connection replaced
// in between, its re-send could run before the record and the new
// connection would stay anonymous. A new connection first raises
// connGen (onEvent, synchronously, before go-zookeeper's re-send reads its
// records), so an unchanged connGen after AddAuth returned means any later
// connection's re-send comes after the record and includes it; a changed
// one sends the credential again (a duplicate record is harmless). Under
// Wrap, whose state is polled, a reconnect faster than the poll can
// go unseen: that window, microseconds wide, stays.
func (s *Floor) addDigest(ctx context.Context, d Digest) error {
	cred := []byte(d.User + ":" + d.Password)
	err := s.Retry(ctx, func() error {
		gen := s.link.connGen.Load()
		if err := s.conn.AddAuth("digest", cred); err != nil {
			return err
		}
		if s.link.connGen.Load() != gen {
			return errReauth
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("zklock: digest auth as %q: %w", d.User, err)
	}
	return nil
}

// errReauth asks retry to send a credential again on the new connection.
var errReauth = errors.New("zklock: connection replaced during auth")
