package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/zklock/internal/session"
)

// Cooperative revocation, as Curator has it: a requester writes
// RevokeMessage into a lock node's data (Curator's Revoker.attemptRevoke),
// and a holder that opted in (Curator's makeRevocable, WithRevocable here)
// is told through the data watch on its own node. Nothing ends by itself:
// the holder decides whether and when to release.

// WithRevocable makes the lock's holds revocable: a revocation request
// written into the node of a hold (RevokeNode, RevokeHolder, Curator's
// Revoker.attemptRevoke) closes Hold.Revoked. The hold does not end: the
// holder decides. A request written while our node still waits is seen
// once it leads, since the data stays on the node. It costs one data read
// per hold: a revocable hold watches its own node from the grant on (other
// holds only once they have lasted a quarter of the session timeout).
func WithRevocable() Option { return func(c *lockConfig) { c.revocable = true } }

// WithRevocationHandler is WithRevocable that also calls fn with the
// hold's node when its revocation request is seen, once per hold, right
// after Revoked's channel is closed (package tier tells its holder and
// observer here). fn runs on a goroutine of the session's and
// must not block, nor call methods of the Lock or Session.
func WithRevocationHandler(fn func(node string)) Option {
	return func(c *lockConfig) { c.revocable, c.onRevoked = true, fn }
}

// revoke records that h's revocation was requested, once: it closes
// h.revoked, then calls the handler, so that a handler that looks for the
// hold it must tell and a holder that looks at the channel after
// publishing itself cannot both miss each other (package tier relies on
// this order). It runs on the own-node watch's goroutine.
func (l *Lock) revoke(h *Hold) {
	first := false
	h.revokeOnce.Do(func() {
		close(h.revoked)
		first = true
	})
	if !first || h.released.Load() {
		return
	}
	l.f.Log().Info("lock revocation requested", "node", h.node)
	if l.onRevoked != nil {
		l.onRevoked(h.node)
	}
}

// RevokeNode asks the holder of node (the full path of a lock node) to
// release it, by writing RevokeMessage into its data as Curator's
// Revoker.attemptRevoke does. A tierlock holder made WithRevocable and a
// Curator holder made revocable are told; other clients are not, and
// nothing ends the hold but its holder. node must be a lock node of one of
// the families Contender knows (so that no other data is overwritten).
//
// It costs one setData request. A write whose outcome is unknown (a lost
// connection) is retried as retry.go classifies errors, after a read that
// shows whether it was applied, so that a Curator holder is not told
// twice. A node that does not exist (released, or never there) gives an
// error wrapping ErrNodeNotFound.
func RevokeNode(ctx context.Context, s *Session, node string) error {
	if err := revokeArgs(ctx, s); err != nil {
		return err
	}
	if err := validateLockNode(node); err != nil {
		return err
	}
	return revoke(ctx, s.f, node)
}

// RevokeHolder asks whoever leads the queue of lockPath to release it:
// the first contender in issue order, of any family (tierlock, Curator,
// kazoo, zk.Lock; see Contender). On a read/write lock or semaphore path
// other holders may share the path: revoke each of them with RevokeNode.
// It returns the node it asked. A path with no contender gives an error
// wrapping ErrNoHolder; a leader that goes away between the listing and
// the write is replaced by the next one.
//
// It costs a getChildren and a setData request (one more of each per
// leader that went away in between).
func RevokeHolder(ctx context.Context, s *Session, lockPath string) (node string, err error) {
	if err := revokeArgs(ctx, s); err != nil {
		return "", err
	}
	if err := ValidatePath(lockPath); err != nil {
		return "", err
	}
	f := s.f
	for {
		var children []string
		err := f.Retry(ctx, func() error {
			var err error
			children, _, err = f.Conn().Children(lockPath)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			return "", fmt.Errorf("zklock: revoke holder of %s: %w", lockPath, ErrNoHolder)
		}
		if err != nil {
			return "", fmt.Errorf("zklock: revoke holder of %s: %w", lockPath, err)
		}
		q := sortQueue(children)
		if len(q) == 0 {
			return "", fmt.Errorf("zklock: revoke holder of %s: %w", lockPath, ErrNoHolder)
		}
		node = lockPath + "/" + q[0].name
		err = revoke(ctx, f, node)
		if errors.Is(err, ErrNodeNotFound) {
			continue // released in between: ask whoever leads now
		}
		return node, err
	}
}

func revokeArgs(ctx context.Context, s *Session) error {
	switch {
	case ctx == nil:
		return ErrNilContext
	case s == nil:
		return ErrNilSession
	case s.f.Closed():
		return s.f.ClosedErr()
	}
	if err := ctx.Err(); err != nil {
		return err // no request for a caller that already gave up
	}
	// Under NewSession credentials are sent in the background: a request
	// that overtook them would be anonymous.
	return s.f.AwaitAuth(ctx)
}

// validateLockNode checks that node is a valid path whose last segment is
// a lock node's name below a lock path.
func validateLockNode(node string) error {
	if err := ValidatePath(node); err != nil {
		return err
	}
	if path.Dir(node) == "/" {
		return fmt.Errorf("%w: %q is a lock path's place, not a lock node", ErrInvalidPath, node)
	}
	if _, _, ok := Contender(path.Base(node)); !ok {
		return fmt.Errorf("%w: %q is not a lock node", ErrInvalidPath, node)
	}
	return nil
}

// revoke writes the revocation request into node's data.
func revoke(ctx context.Context, f *session.Floor, node string) error {
	unknown := false
	err := f.Retry(ctx, func() error {
		if unknown {
			// The last write's fate is unknown: it may have been applied.
			// Writing the same message again is harmless to the request
			// but fires the holder's watch again, and a Curator holder
			// calls its listener on each firing: look first.
			data, _, err := f.Conn().Get(node)
			if err != nil {
				return err
			}
			if IsRevocation(data) {
				return nil
			}
		}
		_, err := f.Conn().Set(node, revokeData, -1)
		if err != nil && !session.Refusal(err) {
			unknown = true
		}
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("zklock: revoke %s: %w: %w", node, ErrNodeNotFound, err)
	case err != nil:
		return fmt.Errorf("zklock: revoke %s: %w", node, err)
	}
	f.Log().Info("lock revocation requested", "node", node)
	return nil
}
