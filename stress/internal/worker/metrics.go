package worker

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tierlock/tierlock/lockmetrics"
)

// metricsServer serves a worker's lock metrics (-metrics) on the address
// its task names, from a registry of its own. Each worker is a target of
// its own: the processes share nothing, and a Prometheus that scrapes them
// all sums them (sum without (instance)); a worker killed by a fault takes
// its counts with it, as a crashed process would, and its replacement in
// the same slot serves on the same port.
type metricsServer struct {
	m    *lockmetrics.Collector
	srv  *http.Server
	done chan struct{}
}

// serveMetrics starts serving on addr.
func serveMetrics(addr string) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	// The lock paths are the run's -paths; the collector keeps the first
	// lockmetrics.DefaultMaxLocks apart and counts the rest as "other".
	m, err := lockmetrics.New(reg, lockmetrics.WithLockName(func(p string) string { return p }))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ms := &metricsServer{m: m, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(ms.done)
		_ = ms.srv.Serve(ln) // returns when close calls Close
	}()
	return ms, nil
}

// collector returns the collector to hook into the locks (nil, which does
// nothing, when ms is nil).
func (ms *metricsServer) collector() *lockmetrics.Collector {
	if ms == nil {
		return nil
	}
	return ms.m
}

// close stops serving and waits for the server's goroutine.
func (ms *metricsServer) close() {
	if ms == nil {
		return
	}
	ms.srv.Close()
	<-ms.done
}
