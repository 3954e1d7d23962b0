package report

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var (
	faultBand   = color.NRGBA{0xff, 0x99, 0x22, 0x50}
	faultLine   = color.RGBA{0xe0, 0x70, 0x00, 0xff}
	failedBand  = color.NRGBA{0xd6, 0x27, 0x28, 0x50}
	recoverLine = color.RGBA{0x2c, 0xa0, 0x2c, 0xff}
)

// minBand is the narrowest fault band drawn: a dropped connection is
// healed at once.
const minBand = vg.Length(2)

// drawFaults marks faults on a chart whose x axis is trX: a band from
// start to healing, a line at the start, a dashed line at the recovery,
// and the label at the top, in one of two rows; where faults crowd, a
// label shrinks to the fault's number or is left out. Faults outside the
// axis are skipped.
func drawFaults(c draw.Canvas, p *plot.Plot, trX func(float64) vg.Length, faults []FaultMark) {
	lo, hi := p.X.Min, p.X.Max
	label := p.X.Tick.Label
	label.Font.Size = vg.Points(8)
	label.XAlign, label.YAlign = draw.XLeft, draw.YTop
	rowEnd := []vg.Length{c.Min.X, c.Min.X} // where each label row is taken up to
	rowH := label.Height("0")
	for _, f := range faults {
		if f.End < lo || f.Start > hi {
			continue
		}
		x0, x1 := trX(max(f.Start, lo)), trX(min(f.End, hi))
		if x1-x0 < minBand {
			x1 = x0 + minBand
		}
		band, line := faultBand, color.Color(faultLine)
		if f.Failed {
			band, line = failedBand, red
		}
		c.FillPolygon(band, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		if f.Start >= lo {
			c.StrokeLine2(draw.LineStyle{Color: line, Width: vg.Points(1)}, x0, c.Min.Y, x0, c.Max.Y)
			label.Color = line
			lx := x0 + vg.Points(2)
		place:
			for _, txt := range []string{f.Label, strings.Fields(f.Label + " ?")[0]} {
				for row := range rowEnd {
					if lx >= rowEnd[row] && lx+label.Width(txt) <= c.Max.X {
						c.FillText(label, vg.Point{X: lx, Y: c.Max.Y - vg.Points(1) - vg.Length(row)*rowH}, txt)
						rowEnd[row] = lx + label.Width(txt) + vg.Points(3)
						break place
					}
				}
			}
		}
		if f.Recovered >= f.Start && f.Recovered >= lo && f.Recovered <= hi {
			x := trX(f.Recovered)
			c.StrokeLine2(draw.LineStyle{Color: recoverLine, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}},
				x, c.Min.Y, x, c.Max.Y)
		}
	}
}

// overviewPlotter draws the activity of each lane over the whole run and
// the faults over it.
type overviewPlotter struct{ ov Overview }

func (o overviewPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for lane, bins := range o.ov.Activity {
		if len(bins) == 0 {
			continue
		}
		w := o.ov.Seconds / float64(len(bins))
		y0, y1 := trY(float64(lane)-0.36), trY(float64(lane)+0.36)
		for b, v := range bins {
			if v <= 0 {
				continue
			}
			x0, x1 := trX(float64(b)*w), trX(float64(b+1)*w)
			// Light to dark blue with the share of the busiest bin; even one
			// hold stays visible.
			a := uint8(60 + 195*min(v, 1))
			c.FillPolygon(color.NRGBA{0x1f, 0x77, 0xb4, a}, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		}
	}
	drawFaults(c, p, trX, o.ov.Faults)
}

func (o overviewPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, o.ov.Seconds, -0.5, float64(o.ov.Lanes) - 0.5
}

// overview draws a whole run: activity per process and the faults.
func overview(name string, ov Overview) (string, error) {
	title := fmt.Sprintf("%s: the whole run, %d fault(s)", name, len(ov.Faults))
	p := newPlot(title, "time since start (s); shade: holds begun", "")
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Add(overviewPlotter{ov})
	var ticks []plot.Tick
	for lane := 0; lane < ov.Lanes; lane++ {
		ticks = append(ticks, plot.Tick{Value: float64(lane), Label: fmt.Sprintf("proc %d", lane)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	// Room above the top lane for the faults' labels.
	p.Y.Min, p.Y.Max = -0.5, float64(ov.Lanes)-0.5+0.9
	p.X.Min, p.X.Max = 0, max(ov.Seconds, 1e-3)
	return svg(p, 900, vg.Points(float64(100+22*ov.Lanes)))
}
