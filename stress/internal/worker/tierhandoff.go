package worker

import (
	"log/slog"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// newTierHandoffImpl is tier-handoff: tier's locks with tier.WithHandoff,
// bounded by the task's -handoff-max and -handoff-max-hold. Consecutive
// local holders share the node, and so the fencing token.
func newTierHandoffImpl(s *zklock.Session, task proto.Task, log *slog.Logger, extra ...tier.Option) (*tierImpl, error) {
	return newTierImpl(s, task, log, append(extra, tier.WithHandoff(task.HandoffMax, task.HandoffMaxHold))...)
}
