package tier

import "github.com/tierlock/tierlock/zklock"

// GateWaiters reports how many goroutines wait at l's gate, so that tests
// of hand-off and revocation know the next holder is there.
func GateWaiters(l *Lock) int { return l.g.waiters() }

// SetGateGaveUpHookForTest sets fn to run in l's gate when a waiter has
// given up and before it checks whether it was granted meanwhile.
func SetGateGaveUpHookForTest(l *Lock, fn func()) { l.g.testGaveUp = fn }

// NewUnorderedMultiLockForTest is NewMultiLock without the sort: members
// are acquired in the order given. Tests use it to show that the sort is
// what keeps overlapping sets from deadlocking.
func NewUnorderedMultiLockForTest(members ...Member) (*MultiLock, error) {
	m, err := NewMultiLock(members...)
	if err != nil {
		return nil, err
	}
	copy(m.members, members)
	return m, nil
}

// SetMultiLockHookForTest sets a function Acquire calls after taking
// member i of m; nil removes it.
func SetMultiLockHookForTest(fn func(m *MultiLock, i int)) { testHookMemberAcquired = fn }

// SetSemPublishHookForTest sets a function Semaphore.Acquire calls between
// its closed check and the publication of the hold; nil removes it.
func SetSemPublishHookForTest(fn func(*Semaphore)) { testHookSemPublish = fn }

// SetDowngradeHookForTest sets a function an RWLock downgrade calls with
// the read node between its grant and the move of the readers onto it;
// nil removes it.
func SetDowngradeHookForTest(fn func(readNode string)) { testHookDowngrade = fn }

// SetPublishHookForTest sets a function Lock.Acquire calls with the
// node's hold just before it publishes the local hold; nil removes it.
func SetPublishHookForTest(fn func(*zklock.Hold)) { testHookPublish = fn }

// SetAskingNodeHookForTest sets a function Lock.Acquire calls once the
// gate is taken and the lock found open, just before it asks zklock for
// the node; nil removes it.
func SetAskingNodeHookForTest(fn func(*Lock)) { testHookAskingNode = fn }

// SetReleasingHookForTest sets a function Lock.Release calls between the
// hold's last count and taking it out of current; nil removes it.
func SetReleasingHookForTest(fn func(*Lock)) { testHookReleasing = fn }

// SetRWPublishHookForTest sets a function an RWLock calls between a grant
// and the publication of its hold (rw.mu may be held); nil removes it.
func SetRWPublishHookForTest(fn func(*RWLock)) { testHookRWPublish = fn }
