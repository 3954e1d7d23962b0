package lockmetrics_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/lockmetrics"
	"github.com/tierlock/tierlock/tier"
	"github.com/tierlock/tierlock/zklock"
)

// A job registry measured by one Collector, its locks labelled by the
// registry's root. In your program, serve reg too:
//
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
func ExampleNew() {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := lockmetrics.New(reg, lockmetrics.WithLockName(lockmetrics.Prefix(2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	// In your program: zklock.Connect(ctx, []string{"zk1:2181", "zk2:2181"}, ...).
	s, err := zklock.Connect(ctx, zktest.Addrs(), zklock.WithLogger(slog.New(slog.DiscardHandler)),
		zklock.WithStateListener(m.SessionListener()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	jobs, err := tier.NewRegistry(s, "/examples/lockmetrics", tier.WithObserver(m.Observe))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer jobs.Close()

	for _, key := range []string{"job-1", "job-2", "job-1"} {
		held, err := jobs.Acquire(ctx, key)
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := jobs.Release(held); err != nil {
			fmt.Println(err)
		}
	}

	fams, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			var labels []string
			for _, lp := range mt.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			switch f.GetName() {
			case "tierlock_acquisitions_total":
				fmt.Printf("%s{%s} %v\n", f.GetName(), strings.Join(labels, ","), mt.GetCounter().GetValue())
			case "tierlock_holders":
				fmt.Printf("%s{%s} %v\n", f.GetName(), strings.Join(labels, ","), mt.GetGauge().GetValue())
			}
		}
	}
	// Output:
	// tierlock_acquisitions_total{lock="/examples/lockmetrics",tier="handoff"} 0
	// tierlock_acquisitions_total{lock="/examples/lockmetrics",tier="zookeeper"} 3
	// tierlock_holders{lock="/examples/lockmetrics"} 0
}

// Prefix names a lock by the first elements of its path, so that per-job
// paths share one label value.
func ExamplePrefix() {
	name := lockmetrics.Prefix(2)
	fmt.Println(name("/scheduler/jobs/job-8127"))
	fmt.Println(name("/scheduler/leader"))
	// Output:
	// /scheduler/jobs
	// /scheduler/leader
}
