// Package progress draws a stress run's progress bar on stderr.
package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar shows a run's progress on stderr: elapsed time against
// -duration, or acquisitions against -acquisitions. It stays quiet when
// stderr is not a terminal.
type Bar struct {
	bar      *progressbar.ProgressBar
	name     string
	duration time.Duration
	start    time.Time
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New returns the bar of implementation name's run, shown on w when show
// is set: elapsed time against duration, or acquisitions against
// acquisitions when it is not 0.
func New(w io.Writer, show bool, name string, duration time.Duration, acquisitions int64) *Bar {
	p := &Bar{name: name, duration: duration, start: time.Now()}
	if !show {
		return p
	}
	max := acquisitions
	if acquisitions == 0 {
		max = duration.Milliseconds()
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

// Update shows n acquisitions so far.
func (p *Bar) Update(n int64) {
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

// Finish removes the bar.
func (p *Bar) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Exit()
	}
}
