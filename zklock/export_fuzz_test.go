package zklock

// Seams for the fuzz and contender tests (package zklock_test): parsing
// and ordering sequence numbers are internal, and tested through these.

// ParseSequence returns the sequence number of a "-lock-" node name (the
// form tierlock, Curator's InterProcessMutex and go-zookeeper's zk.Lock
// create): the integer after the last "-lock-". ZooKeeper's counter is a
// signed 32-bit integer formatted as %010d, so after 2^31 creates under
// one parent it continues at -2147483648. The code itself parses names
// with Contender, which knows every family.
func ParseSequence(name string) (int32, bool) { return parseAfter(name, lockMarker) }

// SequenceBefore is sequenceBefore: whether sequence a was issued before b
// (serial-number arithmetic across the 32-bit wrap).
func SequenceBefore(a, b int32) bool { return sequenceBefore(a, b) }
