// Package lockmetrics exports Prometheus metrics for tier locks: how long
// acquisitions wait and holds last, how many goroutines hold and wait, how
// acquisitions end (through ZooKeeper or a local hand-off, failed), why
// holds are lost, and the state of the ZooKeeper sessions; and for
// scheduled jobs (runonce's Runner: gocronlock's and cronlock's): runs and skips by reason, and
// Lock's latency.
//
// It lives apart from tier and zklock so that the core does not depend on
// Prometheus: it is built only on their hooks, [tier.WithObserver],
// [zklock.WithStateListener] and [zklock.WithStallHandler], and costs no
// ZooKeeper request.
//
//	reg := prometheus.NewRegistry()
//	m, err := lockmetrics.New(reg, lockmetrics.WithLockName(lockmetrics.Prefix(1)))
//	s, err := zklock.Connect(ctx, servers, zklock.WithStateListener(m.SessionListener()))
//	l, err := tier.New(s, "/jobs/42", tier.WithObserver(m.Observe))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// The collector registers on the prometheus.Registerer it is given, never
// on the global registry unless that is what the caller passes.
//
// # Labels stay bounded
//
// Every lock metric has a "lock" label, whose value comes from the lock's
// path through a function the caller chooses ([WithLockName]). The default
// is the constant "all": the collector cannot see how paths are laid out,
// and one raw path per job (a Registry's root/<key>) would make a series per
// job, forever. Even the lock's parent is per job in a layout such as
// /jobs/<id>/lock. The caller knows the layout: [Prefix] keeps the first
// path elements (a registry's root), and a fixed set of locks can use the
// path itself. Should the function return more names than
// [WithMaxLocks] allows anyway, the extra names are counted under "other".
//
// Files: collector.go (the metrics, New and its options), observe.go (tier
// events to metrics), names.go (lock names and their bound), session.go
// (session states), stall.go (waits stalled behind a session with no
// connection), jobs.go (scheduled jobs).
package lockmetrics
