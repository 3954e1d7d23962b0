package worker

import "context"

// nolockImpl excludes nothing. Running it must make the checker report
// overlaps: it shows that a passing run means something.
type nolockImpl struct{}

func (nolockImpl) holder(int) holder                           { return nolockImpl{} }
func (nolockImpl) tokenKind() string                           { return "" }
func (nolockImpl) close() error                                { return nil }
func (nolockImpl) acquire(context.Context, int) (int64, error) { return 0, nil }
func (nolockImpl) release(int) error                           { return nil }
func (nolockImpl) lost(int) (<-chan struct{}, func() error)    { return nil, nil }
