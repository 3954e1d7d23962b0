package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The charts are drawn by gonum/plot, which renders SVG in Go. The SVG is
// put inline in the HTML page, so the report is one self-contained file
// that works offline. (go-echarts, the other charting library considered,
// renders pages that load echarts.min.js from a CDN; its Go module does not
// ship that script, so its reports would be blank without network access.)

func init() {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
}

// palette colors implementations and goroutines.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff},
	{0x17, 0xbe, 0xcf, 0xff}, {0xbc, 0xbd, 0x22, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0x39, 0x3b, 0x79, 0xff},
}

var red = color.RGBA{0xd6, 0x27, 0x28, 0xff}

func implColor(i int) color.Color { return palette[i%len(palette)] }

// implCSS is implColor for the HTML legend: the latency charts carry no
// legend of their own, which would hide curves wherever it was put.
func implCSS(i int) string {
	c := palette[i%len(palette)]
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}

// svg renders p as an inline <svg> element.
func svg(p *plot.Plot, w, h vg.Length) (string, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:] // drop the XML prolog: the SVG is inline in HTML
	}
	return s, nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	return p
}

// barChart draws one horizontal bar per implementation, labelled with its
// value.
func barChart(impls []Impl, title, x string, value func(Impl) float64, format string) (string, error) {
	p := newPlot(title, x, "")
	var names []string
	var labels plotter.XYLabels
	maxV := 0.0
	for i, im := range impls {
		v := value(im)
		maxV = max(maxV, v)
		row := float64(len(impls) - 1 - i) // first implementation on top
		b, err := plotter.NewBarChart(plotter.Values{v}, vg.Points(16))
		if err != nil {
			return "", err
		}
		b.Horizontal = true
		b.XMin = row
		b.Color = implColor(i)
		b.LineStyle.Width = 0
		p.Add(b)
		labels.XYs = append(labels.XYs, plotter.XY{X: v, Y: row})
		labels.Labels = append(labels.Labels, " "+fmt.Sprintf(format, v))
	}
	for i := len(impls) - 1; i >= 0; i-- {
		names = append(names, impls[i].Name)
	}
	p.NominalY(names...)
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
	p.X.Min = 0
	p.X.Max = maxV * 1.3 // room for the labels
	p.X.Tick.Marker = humanTicks{}
	if maxV == 0 {
		p.X.Max = 1
	}
	p.Add(plotter.NewGrid())
	return svg(p, 440, vg.Points(float64(50+28*len(impls))))
}

// latencyCDF draws the distribution of acquire latencies of every
// implementation as a cumulative curve on a logarithmic time axis.
func latencyCDF(impls []Impl) (string, error) {
	p := newPlot("Acquire latency: cumulative distribution", "latency (log scale)", "fraction of acquisitions ≤ x")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = microsLogTicks{}
	p.Y.Min, p.Y.Max = 0, 1
	for i, im := range impls {
		v := positive(im.LatencyUS)
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		// At most ~400 points: enough for a smooth curve.
		step := max(1, len(v)/400)
		var xys plotter.XYs
		for j := 0; j < len(v); j += step {
			xys = append(xys, plotter.XY{X: v[j], Y: float64(j+1) / float64(len(v))})
		}
		xys = append(xys, plotter.XY{X: v[len(v)-1], Y: 1})
		l, err := plotter.NewLine(xys)
		if err != nil {
			return "", err
		}
		l.Color = implColor(i)
		l.Width = vg.Points(2)
		p.Add(l)
	}
	p.Add(plotter.NewGrid())
	return svg(p, 440, 300)
}

// latencyHistogram draws, per implementation, the share of acquisitions in
// logarithmically spaced latency bins.
func latencyHistogram(impls []Impl) (string, error) {
	p := newPlot("Acquire latency: histogram", "latency (log scale)", "share of acquisitions")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = microsLogTicks{}
	// Bins span from the lowest 0.5th percentile of the implementations to
	// the highest maximum; the rare faster acquisitions fall in the first
	// bin, so that a few outliers do not squeeze the rest into a few bins.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, im := range impls {
		v := positive(im.LatencyUS)
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		lo, hi = min(lo, v[len(v)/200]), max(hi, v[len(v)-1])
	}
	if math.IsInf(lo, 0) {
		return "", nil
	}
	const bins = 40
	llo, lhi := math.Log10(lo), math.Log10(hi)+1e-9
	width := (lhi - llo) / bins
	if width <= 0 {
		width = 0.05
	}
	for i, im := range impls {
		v := positive(im.LatencyUS)
		if len(v) == 0 {
			continue
		}
		counts := make([]float64, bins)
		for _, x := range v {
			b := min(int((math.Log10(x)-llo)/width), bins-1)
			counts[max(b, 0)]++
		}
		var xys plotter.XYs
		for b, c := range counts {
			xys = append(xys,
				plotter.XY{X: math.Pow(10, llo+float64(b)*width), Y: c / float64(len(v))},
				plotter.XY{X: math.Pow(10, llo+float64(b+1)*width), Y: c / float64(len(v))})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return "", err
		}
		c := implColor(i).(color.RGBA)
		l.Color = c
		l.Width = vg.Points(1.5)
		l.FillColor = color.RGBA{c.R, c.G, c.B, 0x20}
		p.Add(l)
	}
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	return svg(p, 440, 300)
}

func positive(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if x > 0 {
			out = append(out, x)
		}
	}
	return out
}

// timelinePlotter draws holds as bars, one lane per process.
type timelinePlotter struct{ tl Timeline }

// minBar is the narrowest bar drawn: a hold of a few microseconds on a
// window of tens of milliseconds would otherwise be invisible.
const minBar = vg.Length(1.2)

func (t timelinePlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	// Lane backgrounds, alternating, so a lane is easy to follow.
	for lane := 0; lane < t.tl.Lanes; lane++ {
		if lane%2 == 1 {
			continue
		}
		y0, y1 := trY(float64(lane)-0.5), trY(float64(lane)+0.5)
		c.FillPolygon(color.Gray{0xf0}, []vg.Point{
			{X: c.Min.X, Y: y0}, {X: c.Max.X, Y: y0}, {X: c.Max.X, Y: y1}, {X: c.Min.X, Y: y1}})
	}
	for _, b := range t.tl.Bars {
		x0, x1 := trX(b.Start), trX(b.End)
		if x1-x0 < minBar {
			x1 = x0 + minBar
		}
		y0, y1 := trY(float64(b.Lane)-0.36), trY(float64(b.Lane)+0.36)
		col := color.Color(palette[b.G%len(palette)])
		if b.Overlap {
			col = red
			y0, y1 = trY(float64(b.Lane)-0.5), trY(float64(b.Lane)+0.5)
		}
		c.FillPolygon(col, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	}
	drawFaults(c, p, trX, t.tl.Faults)
}

func (t timelinePlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	return t.tl.From, t.tl.To, -0.5, float64(t.tl.Lanes) - 0.5
}

// timeline draws who held one lock path during a window of the run.
func timeline(name string, tl Timeline) (string, error) {
	title := fmt.Sprintf("%s: who held %s, %d holds from %.1f ms to %.1f ms",
		name, tl.Path, len(tl.Bars), tl.From, tl.To)
	p := newPlot(title, "time since start (ms); bar color: goroutine", "")
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Add(timelinePlotter{tl})
	var ticks []plot.Tick
	for lane := 0; lane < tl.Lanes; lane++ {
		ticks = append(ticks, plot.Tick{Value: float64(lane), Label: fmt.Sprintf("proc %d", lane)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.5, float64(tl.Lanes)-0.5
	p.X.Min, p.X.Max = tl.From, tl.To
	return svg(p, 900, vg.Points(float64(70+22*tl.Lanes)))
}

// humanTicks labels a linear axis 0, 25k, 50k... instead of 25000.00.
type humanTicks struct{}

func (humanTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label == "" {
			continue
		}
		v := ts[i].Value
		ts[i].Label = formatCount(v)
	}
	return ts
}

// microsLogTicks marks a logarithmic axis of microseconds, labelled as
// durations (10µs, 2ms, 500ms...): every step within half a decade, 1-2-5
// steps over up to three decades, powers of ten beyond.
type microsLogTicks struct{}

func (microsLogTicks) Ticks(lo, hi float64) []plot.Tick {
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
			if m == 1 || decades <= 3 && (m == 2 || m == 5) || decades < 0.5 {
				t.Label = formatMicros(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// formatMicros writes a duration given in microseconds compactly.
func formatMicros(us float64) string {
	f := func(v float64, unit string) string { return strconv.FormatFloat(v, 'g', 3, 64) + unit }
	switch {
	case us >= 1e6:
		return f(us/1e6, "s")
	case us >= 1e3:
		return f(us/1e3, "ms")
	case us >= 1:
		return f(us, "µs")
	default:
		return f(us*1e3, "ns")
	}
}
