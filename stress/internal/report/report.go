// Package report writes the stress command's HTML report: the verdict of
// the checker, the comparison table, throughput and ZooKeeper load per
// implementation, the distribution of acquire latencies, and a timeline of
// who held a lock, one lane per process, on which a reader sees at a
// glance that holds never overlap.
//
// With fault injection it also shows the fault log, marks the faults on
// the timelines, and draws a whole-run activity chart per implementation
// with the faults as shaded bands.
//
// The page is a single file with inline SVG charts and no script: it opens
// offline.
package report

import (
	"fmt"
	"html/template"
	"io"
	"time"
)

// Data is everything the report shows.
type Data struct {
	Title     string
	Generated time.Time
	Settings  [][2]string // name, value
	Header    []string    // comparison table
	Rows      [][]string
	Impls     []Impl
	OK        bool
	// Violated tells a failure of mutual exclusion (a red banner) from
	// lock errors or an incomplete run without violation (an amber one).
	Violated bool
	Verdict  string   // one line
	Failures []string // details when !OK
	// What an acquisition cost inside the measured window, and the
	// throughput against the servers' limits, each with a line saying how
	// to read it; empty when not measured.
	CostNote     string
	CostHeader   []string
	CostRows     [][]string
	LimitsNote   string
	LimitsHeader []string
	LimitsRows   [][]string
	// The fault log (a run with fault injection), with a line that says
	// how to read it.
	FaultNote   string
	FaultHeader []string
	FaultRows   [][]string
	// A read/write lock or semaphore run's own figures (reader
	// concurrency, writer wait, lease utilization), with a line that
	// says what they are; empty for a mutex run.
	RecipeNote   string
	RecipeHeader []string
	RecipeRows   [][]string
	// ImplLegend says what each implementation of the comparison table is
	// (name, what it is), and Warnings why the comparison is not to be
	// taken at face value (a saturated machine, one run); both shown
	// under the table.
	ImplLegend [][2]string
	Warnings   []string
}

// Impl is what the report shows of one implementation.
type Impl struct {
	Name      string
	PerSec    float64
	ReqPerAcq float64
	LatencyUS []float64 // acquire latencies (a sample is enough)
	Timeline  Timeline
	Overview  *Overview // whole-run activity with the faults; nil without faults
	Verdict   string    // the checker's verdict in words
	OK        bool
}

// Timeline is a window of the holds of one lock path.
type Timeline struct {
	Path     string
	Lanes    int     // processes
	From, To float64 // window, ms since the start of the run
	Bars     []Bar
	Faults   []FaultMark // ms since the start of the run; drawn where they meet the window
}

// FaultMark is one injected fault on a chart: a band from its start to its
// healing, and a line where the workers it hit acquired again.
type FaultMark struct {
	Start, End float64 // the fault and its healing
	Recovered  float64 // the affected workers' next acquisition; < Start: none
	Label      string  // short: "3 kill"
	Failed     bool
}

// Overview is a whole run at a glance: per process lane, how many holds
// began in each time bin, and the faults.
type Overview struct {
	Lanes    int
	Seconds  float64     // run length
	Activity [][]float64 // lane, bin: holds entered in the bin, as a fraction of the busiest bin
	Faults   []FaultMark // seconds since the start
}

// Bar is one hold.
type Bar struct {
	Lane       int     // process
	G          int     // goroutine, for its color
	Start, End float64 // ms since the start of the run
	Overlap    bool    // the checker found it overlapping another hold
}

type chartSet struct {
	Throughput, Requests, CDF, Histogram template.HTML
	Legend                               []legendEntry
	Timelines                            []namedChart
	Overviews                            []namedChart
}

type legendEntry struct{ Name, Color string }

type namedChart struct {
	Name    string
	Verdict string
	OK      bool
	SVG     template.HTML
}

// Write renders the report.
func Write(w io.Writer, d Data) error {
	var cs chartSet
	var err error
	str := func(s string, e error) template.HTML {
		if e != nil && err == nil {
			err = e
		}
		return template.HTML(s) // SVG made by gonum/plot from our own numbers
	}
	cs.Throughput = str(logBarChart(d.Impls, "Throughput", "acquisitions per second",
		func(im Impl) float64 { return im.PerSec }, "%.0f/s"))
	cs.Requests = str(barChart(d.Impls, "ZooKeeper requests per acquisition", "requests",
		func(im Impl) float64 { return im.ReqPerAcq }, "%.2f"))
	for i, im := range d.Impls {
		cs.Legend = append(cs.Legend, legendEntry{im.Name, implCSS(i)})
	}
	cs.CDF = str(latencyCDF(d.Impls))
	cs.Histogram = str(latencyHistogram(d.Impls))
	for _, im := range d.Impls {
		if len(im.Timeline.Bars) == 0 {
			continue
		}
		cs.Timelines = append(cs.Timelines, namedChart{
			Name: im.Name, Verdict: im.Verdict, OK: im.OK,
			SVG: str(timeline(im.Name, im.Timeline)),
		})
	}
	for _, im := range d.Impls {
		if im.Overview == nil {
			continue
		}
		cs.Overviews = append(cs.Overviews, namedChart{
			Name: im.Name, Verdict: im.Verdict, OK: im.OK,
			SVG: str(overview(im.Name, *im.Overview)),
		})
	}
	if err != nil {
		return fmt.Errorf("report: chart: %w", err)
	}
	return page.Execute(w, struct {
		Data
		Charts chartSet
	}{d, cs})
}

var page = template.Must(template.Must(template.New("report").Parse(commonCSS)).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 24px; color: #222; max-width: 1400px; }
{{template "common-css"}}
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 4px 8px; border-bottom: 1px solid #e5e5e5; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; }
td:first-child, th:first-child { text-align: left; font-weight: bold; }
.settings td { text-align: left; font-weight: normal; }
.faults td, .faults th { text-align: left; font-weight: normal; white-space: normal; }
.faults td:first-child { font-weight: bold; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.tl { margin: 10px 0 18px 0; }
.tl .cap { font-size: 13px; margin: 2px 0; }
.ok { color: #1d5e1a; } .bad { color: #8a1414; font-weight: bold; }
.legend { font-size: 14px; margin: 6px 0 2px 60px; }
.legend span { margin-right: 22px; }
.legend i { display: inline-block; width: 22px; height: 4px; margin: 0 6px 4px 0; vertical-align: middle; }
.note { padding: 6px 12px; border-radius: 6px; font-size: 14px; margin: 8px 0; max-width: 1100px; }
pre { background: #f7f7f7; padding: 8px; font-size: 12px; overflow-x: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<div class="sub">generated {{.Generated.Format "2006-01-02 15:04:05 MST"}}</div>
{{template "verdict" .}}
{{if .Failures}}<pre>{{range .Failures}}{{.}}
{{end}}</pre>{{end}}

<h2>Comparison</h2>
<div class="scroll"><table>
<tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{if .ImplLegend}}<table class="settings">
{{range .ImplLegend}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>
{{end}}</table>{{end}}
{{range .Warnings}}<div class="note warn">⚠ {{.}}</div>
{{end}}<p class="sub">Acquisitions are the holds entered inside the measured window (after the warm-up, up to the deadline),
acq/s those over the window's length. Latency is the time spent in Acquire; hold is the mean critical section. zk
req/acq counts the requests the ZooKeeper servers received inside the window (read at its edges), divided by
acquisitions. znodes/path and watches/path are the peaks sampled under a lock path. fair proc / fair gor: Jain's
fairness index of acquisitions over processes / goroutines (1 = equal shares). overlaps, token viol and lost come
from the independent checker, which checks every hold, inside the window or not.</p>

{{if .CostHeader}}<h2>Cost per acquisition</h2>
<p class="sub">{{.CostNote}}</p>
<div class="scroll"><table>
<tr>{{range .CostHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .CostRows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}

{{if .LimitsHeader}}<p class="sub">{{.LimitsNote}}</p>
<div class="scroll"><table>
<tr>{{range .LimitsHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .LimitsRows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}

{{if .RecipeHeader}}<p class="sub">{{.RecipeNote}}</p>
<div class="scroll"><table>
<tr>{{range .RecipeHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .RecipeRows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}

<div class="charts">
<div>{{.Charts.Throughput}}</div>
<div>{{.Charts.Requests}}</div>
</div>

<h2>Acquire latency</h2>
<div class="legend">{{range .Charts.Legend}}<span><i style="background:{{.Color}}"></i>{{.Name}}</span>{{end}}</div>
<div class="charts">
<div>{{.Charts.CDF}}</div>
<div>{{.Charts.Histogram}}</div>
</div>

{{if .FaultHeader}}<h2>Faults</h2>
<p class="sub">{{.FaultNote}}</p>
<div class="scroll"><table class="faults">
<tr>{{range .FaultHeader}}<th>{{.}}</th>{{end}}</tr>
{{range .FaultRows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
<p class="sub">Below, the whole run: a lane per worker (a replacement of a killed worker takes its lane), shaded where holds
began, darker where more did. An orange band spans each fault from its start to its healing, a dashed green line
marks the next acquisition of the worker(s) it hit; a failed fault is red.</p>
{{range .Charts.Overviews}}<div class="tl">
<div class="cap"><b>{{.Name}}</b>: <span class="{{if .OK}}ok{{else}}bad{{end}}">{{.Verdict}}</span></div>
{{.SVG}}
</div>
{{end}}{{end}}

<h2>Who held the lock</h2>
<p class="sub">One lane per worker process; each bar is one critical section, colored by goroutine. Mutual exclusion
means that no two bars anywhere in a chart share a vertical line; a hold the checker found overlapping another would
be drawn in red across its whole lane. Very short holds are widened to stay visible. A fault within the window is an
orange band.</p>
{{range .Charts.Timelines}}<div class="tl">
<div class="cap"><b>{{.Name}}</b>: <span class="{{if .OK}}ok{{else}}bad{{end}}">{{.Verdict}}</span></div>
{{.SVG}}
</div>
{{end}}

<h2>Settings</h2>
<table class="settings">
{{range .Settings}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>
{{end}}</table>
</body>
</html>
`))
