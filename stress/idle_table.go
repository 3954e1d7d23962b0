package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// The table of stress -idle-cost.

// idleRates are one row's figures per session per minute, the empty
// server's subtracted where it was measured; ok* say which are known.
type idleRates struct {
	pings, syncs, other float64
	received            float64
	serverMs, clientMs  float64
	okReceived, okCPU   bool
	serverCore          float64 // the whole window's server CPU, in processors (-1: unknown)
	clientCore          float64
}

// ratesOf computes p's rates; base is the empty server's phase, or nil.
func ratesOf(p, base *idlePhase) idleRates {
	r := idleRates{serverCore: -1}
	if p.window <= 0 {
		return r
	}
	r.clientCore = float64(p.clientCPU) / float64(p.window)
	if p.serverCPU >= 0 {
		r.serverCore = float64(p.serverCPU) / float64(p.window)
	}
	if p.opened == 0 {
		return r
	}
	perMin := func(v float64) float64 { return v / float64(p.opened) / p.window.Minutes() }
	// less is what the empty server did over as long as p's window.
	less := func(v float64) float64 {
		if base == nil || base.window <= 0 {
			return 0
		}
		return v * float64(p.window) / float64(base.window)
	}
	r.pings, r.syncs, r.other = perMin(float64(p.wire.pings)), perMin(float64(p.wire.syncs)), perMin(float64(p.wire.other))
	if p.packets >= 0 {
		r.okReceived = true
		var b int64
		if base != nil && base.packets >= 0 {
			b = base.packets
		}
		r.received = perMin(float64(p.packets) - less(float64(b)))
	}
	var bc time.Duration
	if base != nil {
		bc = base.clientCPU
	}
	r.clientMs = perMin(float64(p.clientCPU)-less(float64(bc))) / float64(time.Millisecond)
	if p.serverCPU >= 0 {
		r.okCPU = true
		var bs time.Duration
		if base != nil && base.serverCPU >= 0 {
			bs = base.serverCPU
		}
		r.serverMs = perMin(float64(p.serverCPU)-less(float64(bs))) / float64(time.Millisecond)
	}
	return r
}

// printIdle prints the heading, what the columns count, the table, the
// periods measured and the failures.
func printIdle(w io.Writer, cfg idleConfig, info coldInfo, phases []idlePhase) {
	fmt.Fprintf(w, "stress -idle-cost: ZooKeeper %s (%s); run started %s\n",
		strings.Join(info.servers, ","), info.source, info.started.Format(time.RFC3339))
	fmt.Fprintf(w, "%d idle sessions per implementation, session timeout %v asked, opened %v apart, settled %v, measured %v each\n",
		cfg.Sessions, cfg.SessionTimeout, cfg.Stagger, cfg.Settle, cfg.For)
	if info.load0 != "" {
		fmt.Fprintf(w, "host load average (1, 5, 15 min): %s at the start, %s at the end\n", info.load0, info.load1)
	}
	var base *idlePhase
	for i := range phases {
		if phases[i].impl == "" && phases[i].window > 0 {
			base = &phases[i]
		}
	}
	less := "as measured (no empty-server baseline)"
	if base != nil {
		less = "less the empty server's over as long"
	}
	fmt.Fprintf(w, "Per idle session per minute, %s:\n"+
		"pings, syncs, other: requests the sessions wrote (on the wire, by opcode); received: packets the server\n"+
		"received (mntr zk_packets_received); server ms: the ZooKeeper process's CPU time (utime+stime, /proc/<pid>/stat);\n"+
		"client ms: this process's (getrusage); x: ratio to zk.Lock's (gozk);\n"+
		"%%core: all the sessions' CPU time over the window, unsubtracted, in percent of one processor\n\n", less)
	rates := make([]idleRates, len(phases))
	var gozk *idleRates
	for i := range phases {
		rates[i] = ratesOf(&phases[i], base)
		if phases[i].impl == "gozk" && gozk == nil {
			gozk = &rates[i]
		}
	}
	printIdleTable(w, cfg, phases, rates, gozk)
	printIdleNotes(w, cfg, phases, rates)
}

// printIdleTable prints one line per phase, the empty server's first.
func printIdleTable(w io.Writer, cfg idleConfig, phases []idlePhase, rates []idleRates, gozk *idleRates) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"", "sessions", "pings", "syncs", "other", "received", "x", "server ms", "x", "%core", "client ms", "x", "%core"}
	_, _ = io.WriteString(tw, strings.Join(head, "\t")+"\t\n")
	for i, p := range phases {
		r := rates[i]
		name := "empty server"
		if p.impl != "" {
			name = implName(p.impl)
		}
		line := []string{name, "0"}
		if p.impl != "" {
			line[1] = fmt.Sprintf("%d/%d", p.alive, cfg.Sessions)
		}
		switch {
		case p.window <= 0:
			line = append(line, "not measured")
		case p.opened == 0:
			line = append(line, "-", "-", "-", "-", "-", "-", "-", core(r.serverCore), "-", "-", core(r.clientCore))
		default:
			line = append(line, sig3(r.pings), sig3(r.syncs), sig3(r.other))
			line = append(line, known(r.okReceived, r.received), idleRatio(r.okReceived, r.received, gozk, func(g *idleRates) float64 { return g.received }))
			line = append(line, known(r.okCPU, r.serverMs), idleRatio(r.okCPU, r.serverMs, gozk, func(g *idleRates) float64 { return g.serverMs }), core(r.serverCore))
			line = append(line, sig3(r.clientMs), idleRatio(true, r.clientMs, gozk, func(g *idleRates) float64 { return g.clientMs }), core(r.clientCore))
		}
		fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
	}
	_ = tw.Flush()
}

// printIdleNotes says how often each implementation's sessions pinged
// and synced, and what failed.
func printIdleNotes(w io.Writer, cfg idleConfig, phases []idlePhase, rates []idleRates) {
	fmt.Fprintf(w, "\ngo-zookeeper (v1.0.4) pings every third of the session timeout granted (%.2fs at %v) on a ticker that no request resets\n",
		(cfg.SessionTimeout / 3).Seconds(), cfg.SessionTimeout)
	for i, p := range phases {
		r := rates[i]
		if p.impl == "" || p.window <= 0 || p.opened == 0 {
			continue
		}
		line := fmt.Sprintf("  %-8s a session pinged %s, synced %s", implName(p.impl), every(r.pings), every(r.syncs))
		if p.packets >= 0 {
			line += fmt.Sprintf("; requests written %d, received by the server %d", p.wire.total(), p.packets)
		}
		fmt.Fprintln(w, line)
	}
	for _, p := range phases {
		if p.impl == "" {
			continue
		}
		if lost := p.opened - p.alive; lost > 0 && p.window > 0 {
			fmt.Fprintf(w, "  lost: %s: %d of %d sessions were not the same live session at the window's end\n", implName(p.impl), lost, p.opened)
		}
		for _, e := range p.errs {
			fmt.Fprintf(w, "  failed: %s: %s (of %d that did not open)\n", implName(p.impl), e, p.failed)
		}
	}
}

// every is the period of a rate per minute.
func every(perMin float64) string {
	if perMin <= 0 {
		return "never"
	}
	return fmt.Sprintf("every %.2fs", 60/perMin)
}

// sig3 formats v with about three significant digits.
func sig3(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case v == 0:
		return "0"
	case a < 0.01:
		return fmt.Sprintf("%.4f", v)
	case a < 1:
		return fmt.Sprintf("%.3f", v)
	case a < 10:
		return fmt.Sprintf("%.2f", v)
	case a < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// known is sig3(v), or n/a.
func known(ok bool, v float64) string {
	if !ok {
		return "n/a"
	}
	return sig3(v)
}

// core formats a share of one processor in percent, or n/a.
func core(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// idleRatio is v over gozk's figure, or "-" when either is unknown.
func idleRatio(ok bool, v float64, gozk *idleRates, of func(*idleRates) float64) string {
	if !ok || gozk == nil || of(gozk) <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v/of(gozk))
}
