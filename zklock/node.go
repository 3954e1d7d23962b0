package zklock

// A lock node, as every file above reads it: its name (Curator's protected
// form, the families of every recipe that shares a path, the sequence and
// its order across the 32-bit wrap; its path's validity: paths.go), what
// its creator wrote in it (nodeData, a revocation request, a Participant), and the
// queue's order with the recipes' rules over it (who goes, whom to watch).

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Node names follow Curator's protected form, _c_<uuid>-lock-<seq>, so that
// Curator's InterProcessMutex, kazoo's Lock and go-zookeeper's zk.Lock
// queue on the same path with us.
const (
	protectedPrefix = "_c_"
	lockMarker      = "-lock-"
	leaseMarker     = "-lease-" // a semaphore's leases (semaphore.go)
)

// The markers of the lock nodes of other recipes that tierlock counts as
// contenders for its mutex: a node whose name has one of them (or
// lockMarker) followed by a sequence number and nothing else holds or
// waits for the path. See Contender.
const (
	kazooLockMarker  = "__lock__"  // kazoo Lock and WriteLock: <uuid hex>__lock__<seq>
	kazooReadMarker  = "__rlock__" // kazoo ReadLock: <uuid hex>__rlock__<seq>
	curatorReadMark  = "-__READ__" // Curator InterProcessReadWriteLock reader: _c_<uuid>-__READ__<seq>
	curatorWriteMark = "-__WRIT__" // Curator InterProcessReadWriteLock writer: _c_<uuid>-__WRIT__<seq>
)

// Family names the recipe that made a lock node.
type Family string

// The families of lock nodes.
const (
	// FamilyLock: "-lock-" nodes of tierlock, Curator's InterProcessMutex
	// and go-zookeeper's zk.Lock.
	FamilyLock Family = "lock"
	// FamilyKazooLock: kazoo's Lock and WriteLock ("__lock__").
	FamilyKazooLock Family = "kazoo-lock"
	// FamilyKazooRead: kazoo's ReadLock ("__rlock__").
	FamilyKazooRead Family = "kazoo-rlock"
	// FamilyCuratorRead and FamilyCuratorWrite: Curator's
	// InterProcessReadWriteLock ("-__READ__", "-__WRIT__").
	FamilyCuratorRead  Family = "curator-read"
	FamilyCuratorWrite Family = "curator-write"
)

var families = []struct {
	marker string
	family Family
}{
	{lockMarker, FamilyLock},
	{kazooLockMarker, FamilyKazooLock},
	{kazooReadMarker, FamilyKazooRead},
	{curatorReadMark, FamilyCuratorRead},
	{curatorWriteMark, FamilyCuratorWrite},
}

// Contender parses a child of a lock path as a contender for tierlock's
// mutex: a node of any recipe that holds, or waits to hold, the path
// exclusively or shared. Tierlock waits for every contender issued before
// its own node, whatever its family; a reader of a read/write lock holds
// the path too, so it keeps a tierlock writer out.
//
// A name is a contender when it ends in one of the markers "-lock-"
// (tierlock, Curator's InterProcessMutex, go-zookeeper's zk.Lock),
// "__lock__" and "__rlock__" (kazoo's Lock, WriteLock and ReadLock),
// "-__READ__" and "-__WRIT__" (Curator's read/write lock), followed by the
// sequence number ZooKeeper appended: a decimal that fits a signed 32-bit
// integer (ZooKeeper formats it with %010d, so it is negative after the
// counter wraps). Every other child is ignored: names with none of the
// markers (a Curator semaphore's "leases" and "locks" children, a kazoo
// lease, data an application keeps beside its locks) and names whose
// suffix is not such a number. Ignoring them is safe because every recipe
// above creates its nodes with a marker and a sequence suffix, so no other
// child can be a holder; counting one would be unsafe the other way round,
// since a persistent child never goes away and every waiter behind it
// would wait forever.
func Contender(name string) (Family, int32, bool) {
	for _, f := range families {
		if seq, ok := parseAfter(name, f.marker); ok {
			return f.family, seq, true
		}
	}
	return "", 0, false
}

// parseAfter parses the sequence number that follows the last marker in
// name and ends it.
func parseAfter(name, marker string) (int32, bool) {
	i := strings.LastIndex(name, marker)
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+len(marker):], 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// sequenceBefore reports whether sequence a was issued before b. It uses
// serial-number arithmetic (RFC 1982) on the 32-bit counter: a precedes b
// when b-a, computed with wrap-around, is positive. This keeps the order of
// a live queue across the wrap from 2147483647 to -2147483648, provided
// its nodes span fewer than 2^31 sequence numbers (always the case: a
// queue that long would not fit in any server).
//
// Tierlock orders every path this way, mixed or not. The other clients
// do not: after the wrap Curator and kazoo compare the sequence suffixes
// as strings ("-2147483648" sorts before "2147483647", and among negative
// numbers -2147483647 before -2147483648) and go-zookeeper's zk.Lock
// compares the parsed numbers (negative before positive). Each of them
// then puts some new nodes ahead of older ones, so no order that tierlock
// could pick agrees with all of them, and those that agree with one let a
// newer tierlock node jump an older holder. Issue order is the one in
// which tierlock never takes the lock while a contender created before its
// own node exists, so tierlock itself never causes an overlap; what the
// others do after the wrap is theirs (an overlap among them, or a wait on
// a tierlock node that waits on them). A mixed path must not wrap: the
// counter is the parent's, and tierlock creates lock paths as container
// nodes, which the server deletes (resetting the counter) once the queue
// has been empty for a while (not under WithPersistentPath, zkcompat's,
// as zk.Lock's are not).
func sequenceBefore(a, b int32) bool { return int32(uint32(b)-uint32(a)) > 0 }

// hostname is the host's name for nodeData, read once per process. Read
// at every New, it cost each Lock of the drop-in (which makes a Lock per
// path no handle holds) a file read of the kernel's: tier.New's median
// after 30 ms idle went from 60 to 48 µs without it.
var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// nodeData says who created a lock node.
type nodeData struct {
	Host  string `json:"host"`
	Pid   int    `json:"pid"`
	Label string `json:"label,omitempty"`
}

// FamilyLease names the lease nodes of a semaphore (tierlock's Semaphore
// and Curator's InterProcessSemaphoreV2: _c_<guid>-lease-<seq> under
// <path>/leases). Contender never returns it: a lease does not contend for
// a mutex. ListParticipants reports it.
const FamilyLease Family = "lease"

// ParseNode parses a child of a lock path as a lock node of any recipe
// tierlock knows: a contender of the mutex and read/write lock (see
// Contender) or a semaphore lease (FamilyLease).
func ParseNode(name string) (Family, int32, bool) {
	if f, seq, ok := Contender(name); ok {
		return f, seq, true
	}
	if seq, ok := parseLease(name); ok {
		return FamilyLease, seq, true
	}
	return "", 0, false
}

// Participant is one node in a lock's queue.
type Participant struct {
	Node     string    // node name under the lock path
	Sequence int32     // its sequence number
	Family   Family    // the recipe that made it (see Contender and FamilyLease)
	Data     []byte    // what its creator wrote (zklock: JSON host, pid, label; Curator: an IP address; kazoo: its identifier)
	Owner    int64     // the ZooKeeper session that created it (ephemeralOwner)
	Created  time.Time // when the server created it (ctime)
	// Holder reports that the node holds the lock: the first node; for
	// the readers of a read/write lock, every reader no writer precedes;
	// for a semaphore's leases only the first, the one known to hold (the
	// size of a semaphore is not stored in ZooKeeper: the first n hold).
	Holder bool
	// Revoked: its holder was asked to release it (RevokeNode). Data is
	// then RevokeMessage, which replaced what its creator wrote.
	Revoked bool
}

func parseLease(name string) (int32, bool) { return parseAfter(name, leaseMarker) }

// RevokeMessage is what a revocation request writes into a lock node's
// data: Curator's LockInternals.REVOKE_MESSAGE.
const RevokeMessage = "__REVOKE__"

var revokeData = []byte(RevokeMessage)

// IsRevocation reports whether a lock node's data is a revocation request.
// A revoked node's data no longer says who created it (the request
// overwrote the host, pid and label).
func IsRevocation(data []byte) bool { return bytes.Equal(data, revokeData) }

// entry is a contender in a sorted queue: its name and its sequence.
type entry struct {
	name string
	seq  int32
}

// sortQueue keeps the contenders among children (see Contender: the lock
// nodes of every family; other children are ignored) and orders them by
// sequence only, in issue order (sequenceBefore).
func sortQueue(children []string) []entry {
	return sortBy(children, func(c string) (int32, bool) {
		_, seq, ok := Contender(c)
		return seq, ok
	})
}

// sortBy keeps the children parse accepts and orders them by the sequence
// it returns, in issue order.
func sortBy(children []string, parse func(string) (int32, bool)) []entry {
	q := make([]entry, 0, len(children))
	for _, c := range children {
		if seq, ok := parse(c); ok {
			q = append(q, entry{c, seq})
		}
	}
	slices.SortFunc(q, func(a, b entry) int {
		switch {
		case a.seq == b.seq:
			return strings.Compare(a.name, b.name)
		case sequenceBefore(a.seq, b.seq):
			return -1
		default:
			return 1
		}
	})
	return q
}

// position finds our node in the queue: the node named name, or, when name
// is empty (the create's reply was lost), the node carrying our GUID.
func position(q []entry, name, guid string) int {
	for i, e := range q {
		if name != "" && e.name == name {
			return i
		}
		if name == "" && strings.HasPrefix(e.name, protectedPrefix+guid) {
			return i
		}
	}
	return -1
}

// A recipe's queue rule answers, for our node at index i of the sorted
// queue q, the two questions every waiter asks: may it go now, and if not,
// which node must it watch (the one whose deletion can change the answer)?
// The mutex's rule is below; the read/write lock's and the semaphore's are
// other functions of the same shape over the same queue.
type queueRule func(q []entry, i int) (goes bool, watch int)

// watchChildren, as a rule's watch, asks for a watch on the whole queue
// (any child created or deleted) instead of one node.
const watchChildren = -2

// mutexRule: the first node holds the lock; every other node watches its
// immediate predecessor, so a release wakes exactly one waiter (no herd).
func mutexRule(q []entry, i int) (goes bool, watch int) {
	if i == 0 {
		return true, -1
	}
	return false, i - 1
}

// readRule is the read rule over q for the node at i, ignoring the write
// node named own (our held write lock, or "").
func readRule(q []entry, i int, own string) (goes bool, watch int) {
	for j := i - 1; j >= 0; j-- {
		if q[j].name != own && isWriter(q[j].name) {
			return false, j
		}
	}
	return true, -1
}

// isWriter reports whether a contender excludes readers: every family
// except the readers of Curator and kazoo.
func isWriter(name string) bool {
	f, _, ok := Contender(name)
	return ok && f != FamilyCuratorRead && f != FamilyKazooRead
}

// firstN is the semaphore's rule: a lease node holds while it is among the
// first n; otherwise any change to the lease list can let it in, so it
// watches the list.
func firstN(n int) queueRule {
	return func(q []entry, i int) (bool, int) {
		if i < n {
			return true, -1
		}
		return false, watchChildren
	}
}

// queueOf orders the children that queue on a lock's path by parse
// (sortQueueBy) and finds the node called name among them: at is its
// index, -1 when it is not there.
func queueOf(children []string, name string, parse func(string) (int32, bool)) (q []entry, at int) {
	q = sortQueueBy(children, parse)
	return q, position(q, name, "")
}

// sortQueueBy orders the children that queue on a lock's path: every
// family's contenders for the mutex and the read/write lock when parse is
// nil (sortQueue), those parse accepts otherwise (a lock's own rule).
func sortQueueBy(children []string, parse func(string) (int32, bool)) []entry {
	if parse == nil {
		return sortQueue(children)
	}
	return sortBy(children, parse)
}
