package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a run's progress on stderr: elapsed time against
// -duration, or acquisitions against -acquisitions. It stays quiet when
// stderr is not a terminal.
type progress struct {
	bar      *progressbar.ProgressBar
	name     string
	duration time.Duration
	start    time.Time
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newProgress(w io.Writer, show bool, name string, cfg config) *progress {
	p := &progress{name: name, duration: cfg.Duration, start: time.Now()}
	if !show {
		return p
	}
	max := cfg.Acquisitions
	if cfg.Acquisitions == 0 {
		max = cfg.Duration.Milliseconds()
	}
	p.bar = progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(fmt.Sprintf("%-12s", name)),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	return p
}

// update shows n acquisitions so far.
func (p *progress) update(n int64) {
	if p.bar == nil {
		return
	}
	if p.duration > 0 {
		p.bar.Describe(fmt.Sprintf("%-12s %9d acq", p.name, n))
		_ = p.bar.Set64(min(time.Since(p.start).Milliseconds(), p.bar.GetMax64()))
		return
	}
	_ = p.bar.Set64(n)
}

// finish removes the bar.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Exit()
	}
}
