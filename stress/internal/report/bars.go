package report

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// logBars draws one horizontal bar per implementation on a logarithmic
// axis, from a floor below the smallest value, so that a bar 50 times
// longer than another does not flatten it: the throughput of a lock with
// local hand-off next to a strict one's.
type logBars struct {
	values []float64 // by row, the first on top
	floor  float64
}

func (b logBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(b.values)
	for i, v := range b.values {
		if !(v > b.floor) {
			continue
		}
		row := float64(n - 1 - i)
		x0, x1 := trX(b.floor), trX(v)
		y0, y1 := trY(row)-vg.Points(8), trY(row)+vg.Points(8)
		c.FillPolygon(implColor(i), []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	}
}

func (b logBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	hi := b.floor * 10
	for _, v := range b.values {
		hi = max(hi, v)
	}
	return b.floor, hi, -0.5, float64(len(b.values)) - 0.5
}

// logBarChart is barChart on a logarithmic value axis.
func logBarChart(impls []Impl, title, x string, value func(Impl) float64, format string) (string, error) {
	p := newPlot(title, x+" (log scale)", "")
	values := make([]float64, len(impls))
	lo, hi := math.Inf(1), 0.0
	for i, im := range impls {
		values[i] = value(im)
		if values[i] > 0 {
			lo, hi = min(lo, values[i]), max(hi, values[i])
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	// From the power of ten below the smallest bar to a third of a decade
	// past the largest, for its label.
	floor := math.Pow(10, math.Floor(math.Log10(lo)))
	bars := logBars{values: values, floor: floor}
	p.Add(bars)
	var labels plotter.XYLabels
	names := make([]string, len(impls))
	for i, im := range impls {
		names[len(impls)-1-i] = im.Name
		if values[i] > 0 {
			labels.XYs = append(labels.XYs, plotter.XY{X: values[i], Y: float64(len(impls) - 1 - i)})
			labels.Labels = append(labels.Labels, " "+fmt.Sprintf(format, values[i]))
		}
	}
	if len(labels.XYs) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return "", err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].YAlign = draw.YCenter
		}
		p.Add(l)
	}
	p.NominalY(names...)
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = countLogTicks{}
	p.X.Min, p.X.Max = floor, hi*math.Pow(10, 0.6)
	p.Add(plotter.NewGrid())
	return svg(p, 440, vg.Points(float64(50+28*len(impls))))
}

// countLogTicks marks a logarithmic axis of counts with round numbers and
// no decimals: 1-2-5 steps within three decades, powers of ten beyond,
// written 500, 2k, 1M.
type countLogTicks struct{}

func (countLogTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	decades := math.Log10(hi / lo)
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < lo*0.999 || v > hi*1.001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || decades <= 3 && (m == 2 || m == 5) {
				t.Label = formatCount(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// formatCount writes a count compactly and without spurious decimals:
// 0.5, 20, 2k, 1.5M.
func formatCount(v float64) string {
	f := func(x float64, unit string) string { return strconv.FormatFloat(x, 'g', 3, 64) + unit }
	switch a := math.Abs(v); {
	case a >= 1e6:
		return f(v/1e6, "M")
	case a >= 1e3:
		return f(v/1e3, "k")
	}
	return f(v, "")
}
