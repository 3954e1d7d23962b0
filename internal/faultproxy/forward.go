package faultproxy

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// acceptLoop accepts client connections until the listener is closed.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			p.log.Warn("faultproxy: accept", "err", err)
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		if p.refusingLocked(time.Now()) {
			p.stats.Refused++
			p.mu.Unlock()
			c.Close()
			p.log.Debug("faultproxy: refused", "client", c.RemoteAddr().String())
			continue
		}
		p.stats.Accepted++
		gen, target := p.gen, p.target
		p.wg.Add(1)
		p.mu.Unlock()
		go p.handle(c, target, gen)
	}
}

// handle dials the target for client c and starts forwarding. gen is the
// drop generation at accept time: a DropAll during the dial drops c.
func (p *Proxy) handle(c net.Conn, target string, gen uint64) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: dialTimeout}
	up, err := d.DialContext(p.ctx, "tcp", target)
	if err != nil {
		p.mu.Lock()
		p.stats.DialFailed++
		p.mu.Unlock()
		c.Close()
		p.log.Warn("faultproxy: dial target", "target", target, "err", err)
		return
	}
	p.mu.Lock()
	if p.closed || p.gen != gen {
		if !p.closed {
			p.stats.Dropped++
		}
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	l := &link{client: c, upstream: up, done: make(chan struct{})}
	p.links[l] = struct{}{}
	p.wg.Add(2)
	p.mu.Unlock()
	p.log.Debug("faultproxy: connected", "client", c.RemoteAddr().String(), "target", target)
	go p.pipe(l, c, up, true)
	go p.pipe(l, up, c, false)
}

// pipe copies src to dst chunk by chunk, applying pause, latency and
// DropAfter. When either direction ends, the whole link is closed.
//
// Reading and forwarding are two goroutines, so that a chunk read while an
// earlier one waits out its latency is forwarded at its own read time plus
// the latency, not the earlier one's forward plus the latency: a latency,
// not a link that carries one chunk per latency (two requests written back
// to back arrive back to back, as over a long network path).
func (p *Proxy) pipe(l *link, src, dst net.Conn, toServer bool) {
	defer p.wg.Done()
	defer p.closeLink(l)
	chunks := make(chan chunk, pipeDepth)
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for c := range chunks {
			if !p.forward(l, dst, c, toServer) {
				p.closeLink(l) // ends the reader's Read too
				for range chunks {
				}
				return
			}
		}
	}()
	defer func() {
		close(chunks)
		<-forwarded // what was read is forwarded before the link closes
	}()
	for {
		if !p.awaitReadable(l, toServer) {
			return
		}
		buf := make([]byte, bufSize)
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case chunks <- chunk{data: buf[:n], due: time.Now().Add(p.currentLatency())}:
			case <-l.done:
				return
			}
		}
		if err != nil {
			// An end of stream read just before a Stall or Blackhole
			// began is held like data.
			p.awaitReadable(l, toServer)
			return
		}
	}
}

// chunk is what one read got, and when it may be forwarded.
type chunk struct {
	data []byte
	due  time.Time
}

// pipeDepth bounds the chunks read and not yet forwarded, per direction.
const pipeDepth = 1024

// awaitReadable waits while the direction must not be read (Stall,
// Blackhole); false once the link is closed.
func (p *Proxy) awaitReadable(l *link, toServer bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.holdLocked(toServer) && !l.closed {
		p.cond.Wait()
	}
	return !l.closed
}

func (p *Proxy) currentLatency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

// delay waits until due; false when the link closed first.
func (p *Proxy) delay(l *link, due time.Time) bool {
	d := time.Until(due)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.done:
		return false
	}
}

// countDropLocked counts data against an armed DropAfter/ResetAfter: it
// returns the part to forward, and whether the drop fires after it (the
// arming is then spent). p.mu is held.
func (p *Proxy) countDropLocked(data []byte) ([]byte, bool) {
	if len(data) < p.dropLeft {
		p.dropLeft -= len(data)
		return data, false
	}
	data = data[:p.dropLeft]
	p.dropArmed, p.dropLeft, p.dropReset = false, 0, false
	return data, true
}

// forward writes one chunk to dst once its latency has elapsed and the proxy
// is not paused. It reports whether forwarding should continue.
func (p *Proxy) forward(l *link, dst net.Conn, c chunk, toServer bool) bool {
	if !p.delay(l, c.due) {
		return false
	}
	data := c.data
	p.mu.Lock()
	for (p.paused || p.holdLocked(toServer)) && !l.closed {
		p.cond.Wait()
	}
	if l.closed {
		p.mu.Unlock()
		return false
	}
	if toServer && p.blockedUp {
		p.stats.Discarded += int64(len(data))
		p.mu.Unlock()
		return true
	}
	trigger, reset := false, p.dropReset
	var cut []*link
	if toServer && p.dropArmed {
		if data, trigger = p.countDropLocked(data); trigger {
			cut = p.cutLocked(reset)
		}
	}
	p.mu.Unlock()

	n, err := dst.Write(data)
	if hook := testHookTriggered.Load(); trigger && hook != nil {
		(*hook)()
	}
	p.mu.Lock()
	if toServer {
		p.stats.Upstream += int64(n)
	} else {
		p.stats.Downstream += int64(n)
	}
	p.mu.Unlock()
	if trigger {
		p.closeCut(cut, reset)
		return false
	}
	return err == nil
}

// cutLocked detaches every link for DropAfter (or ResetAfter, reset) and
// counts them, before the bytes that trigger it go: the server's answer to
// them finds its link closed and is never forwarded, and whoever has that
// answer sees the cut counted (a DropAll after the write let a loaded
// machine's reply through first: zklock.TestRevokeUnknownOutcome, loaded
// make test run 132). p.mu is held.
func (p *Proxy) cutLocked(reset bool) []*link {
	cut := p.detachAllLocked()
	if reset {
		p.stats.Reset += int64(len(cut))
	} else {
		p.stats.Dropped += int64(len(cut))
	}
	return cut
}

// closeCut closes (or resets) the connections of the links cutLocked cut.
func (p *Proxy) closeCut(cut []*link, reset bool) {
	switch {
	case reset:
		for _, l := range cut {
			resetConn(l.client)
			resetConn(l.upstream)
		}
	default:
		closeConns(cut)
	}
	p.log.Info("faultproxy: DropAfter or ResetAfter fired", "reset", reset, "count", len(cut))
}

// testHookTriggered, when a test sets it, runs right after the bytes that
// trigger DropAfter or ResetAfter are written, before the links close: a
// test that waits there lets the server's answer come while they stand.
var testHookTriggered atomic.Pointer[func()]
