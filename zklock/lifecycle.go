package zklock

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/go-zookeeper/zk"
)

// New returns a lock on path (an absolute ZooKeeper path; it and its
// parents are created as container nodes when first needed, unless
// WithPersistentPath).
func New(s *Session, path string, opts ...Option) (*Lock, error) {
	if s == nil {
		return nil, ErrNilSession
	}
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	if s.f.Closed() {
		return nil, s.f.ClosedErr()
	}
	cfg := lockConfig{recheck: 5 * time.Second, acl: zk.WorldACL(zk.PermAll)}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.recheck <= 0 {
		return nil, fmt.Errorf("%w: recheck interval %v", ErrInvalidOption, cfg.recheck)
	}
	if len(cfg.acl) == 0 {
		return nil, fmt.Errorf("%w: empty ACL", ErrInvalidOption)
	}
	data, err := json.Marshal(nodeData{Host: hostname(), Pid: os.Getpid(), Label: cfg.label})
	if err != nil {
		return nil, fmt.Errorf("zklock: node data: %w", err)
	}
	if len(data) > maxDataLen {
		return nil, fmt.Errorf("%w: node data of %d bytes (label included): at most %d", ErrInvalidOption, len(data), maxDataLen)
	}
	return &Lock{s: s, f: s.f, path: path, data: data, recheck: cfg.recheck, acl: cfg.acl, onLost: cfg.onLost, onGone: cfg.onGone, rule: mutexRule, marker: lockMarker,
		revocable: cfg.revocable, watchNode: cfg.watchNode, onRevoked: cfg.onRevoked, onPosition: cfg.onPosition, persistent: cfg.persistent}, nil
}

// newRecipeLock is New for another recipe's queue on the same core: its
// nodes are named _c_<guid><marker><seq>, rule decides who goes and whom
// to watch, and parse (nil: Contender) picks the children that queue.
func newRecipeLock(s *Session, path, marker string, rule queueRule, parse func(string) (int32, bool), opts ...Option) (*Lock, error) {
	l, err := New(s, path, opts...)
	if err != nil {
		return nil, err
	}
	l.marker, l.rule, l.parse = marker, rule, parse
	return l, nil
}
