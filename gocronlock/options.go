package gocronlock

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/tierlock/tierlock/runonce"
)

// DefaultRetryInterval is the Elector's pause after a failed campaign.
const DefaultRetryInterval = 500 * time.Millisecond

// ElectorOption configures NewElector.
type ElectorOption func(*electorConfig)

type electorConfig struct {
	value    string
	retry    time.Duration
	onChange func(leading bool)
	err      error
}

// WithCandidate sets the value this instance campaigns with, which
// Elector.Leader reports while it leads. Default: host:pid. The candidate's
// node carries it: NewElector refuses one that makes the node's data
// larger than zklock takes (64 KiB, see zklock.WithLabel) with
// runonce.ErrInvalidOption.
func WithCandidate(value string) ElectorOption {
	return func(c *electorConfig) { c.value = value }
}

// WithRetryInterval sets the pause after a campaign that failed (other than
// by Close) before the next. Default: DefaultRetryInterval.
func WithRetryInterval(d time.Duration) ElectorOption {
	return func(c *electorConfig) {
		if d <= 0 && c.err == nil {
			c.err = fmt.Errorf("%w: retry interval %v", runonce.ErrInvalidOption, d)
			return
		}
		c.retry = d
	}
}

// WithLeaderHandler has fn called with true when this instance starts
// leading and with false when it stops, one call at a time, in order, on a
// goroutine of the Elector's own: a slow fn delays only its own later
// calls (IsLeader, exact at any moment, may be ahead of it). fn may call
// Close, which never waits for fn. After Close has returned, fn is called
// at most once more: with false, when its last call was true.
func WithLeaderHandler(fn func(leading bool)) ElectorOption {
	return func(c *electorConfig) { c.onChange = fn }
}

// instanceName is host:pid, the Elector's default candidate.
func instanceName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}
