package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	d := Data{
		Title: "t", Generated: time.Now(), OK: false, Verdict: "FAIL: 1 violation",
		Failures: []string{"x: 1 overlap"},
		Header:   []string{"impl", "acq/s"}, Rows: [][]string{{"a", "10"}, {"b", "<20>"}},
		Settings:   [][2]string{{"procs", "2"}},
		ImplLegend: [][2]string{{"a", "the lock to use"}},
		Warnings:   []string{"warning: the machine was saturated"},
	}
	for i, name := range []string{"a", "b"} {
		im := Impl{Name: name, PerSec: float64(10 * (i + 1)), ReqPerAcq: 3, OK: i == 0, Verdict: "v"}
		for j := 1; j <= 1000; j++ {
			im.LatencyUS = append(im.LatencyUS, float64(j*(i+1)))
		}
		im.Timeline = Timeline{Path: "/p", Lanes: 2, From: 0, To: 10, Bars: []Bar{
			{Lane: 0, G: 1, Start: 1, End: 2}, {Lane: 1, G: 2, Start: 1.5, End: 3, Overlap: true}}}
		d.Impls = append(d.Impls, im)
	}
	var buf bytes.Buffer
	if err := Write(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(page, "<svg"); n != 6 {
		t.Errorf("%d charts, want 6", n)
	}
	for _, want := range []string{"FAIL: 1 violation", "x: 1 overlap", "&lt;20&gt;", "proc 1", "the lock to use",
		"warning: the machine was saturated"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<?xml") {
		t.Error("page has a script or an XML prolog")
	}
}

func TestMicrosLogTicks(t *testing.T) {
	var labels []string
	for _, tk := range (microsLogTicks{}).Ticks(150_000, 420_000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "200ms 300ms 400ms" {
		t.Errorf("labels %q, want 200ms 300ms 400ms", got)
	}
	labels = nil
	for _, tk := range (microsLogTicks{}).Ticks(3, 90_000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "10µs 100µs 1ms 10ms" {
		t.Errorf("labels %q", got)
	}
	for us, want := range map[float64]string{0.5: "500ns", 20: "20µs", 1500: "1.5ms", 2e6: "2s"} {
		if got := formatMicros(us); got != want {
			t.Errorf("formatMicros(%v) = %q, want %q", us, got, want)
		}
	}
}

func TestWriteFaults(t *testing.T) {
	ov := &Overview{Lanes: 3, Seconds: 300}
	for lane := range 3 {
		row := make([]float64, 600)
		for b := range row {
			row[b] = float64((b+lane)%5) / 4
		}
		ov.Activity = append(ov.Activity, row)
	}
	for i := range 40 { // crowded: labels must shrink or go, not pile up
		s := float64(i) * 7.3
		ov.Faults = append(ov.Faults, FaultMark{Start: s, End: s + 2, Recovered: s + 2.5, Label: fmt.Sprintf("%d expire", i+1), Failed: i == 3})
	}
	d := Data{
		Title: "t", Generated: time.Now(), OK: true, Verdict: "PASS",
		Header: []string{"impl"}, Rows: [][]string{{"tier"}},
		FaultNote: "how to read", FaultHeader: []string{"#", "fault"}, FaultRows: [][]string{{"1", "kill: holder killed"}},
		Impls: []Impl{{Name: "tier", PerSec: 1, ReqPerAcq: 1, LatencyUS: []float64{1, 2, 3}, Overview: ov,
			Timeline: Timeline{Path: "/p", Lanes: 3, From: 0, To: 10, Bars: []Bar{{Lane: 0, Start: 1, End: 2}},
				Faults: []FaultMark{{Start: 5000, End: 6000, Recovered: -1, Label: "1 kill"}, {Start: 3, End: 3, Recovered: 4, Label: "2 drop"}}}}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(page, "<svg"); n != 6 {
		t.Errorf("%d charts, want 2 bars + 2 latency + overview + timeline", n)
	}
	for _, want := range []string{"<h2>Faults</h2>", "how to read", "kill: holder killed", "the whole run, 40 fault(s)", "1 expire", "2 drop"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// What a reader sees first and what a narrow window does: the banner says
// a violation in red, lock errors without one in amber; every table
// scrolls inside its own box; throughput is on a log axis, whose ticks
// are round numbers.
func TestBannerTablesAndLogThroughput(t *testing.T) {
	d := Data{
		Title: "t", Generated: time.Now(), Verdict: "FAIL: 0 violations in 10 holds checked, but 2 lock error(s)",
		Header: []string{"impl", "acq/s"}, Rows: [][]string{{"tier", "100"}},
		CostNote: "inside the window", CostHeader: []string{"impl", "client CPU/acq"}, CostRows: [][]string{{"tier", "20µs"}},
		LimitsNote: "limits", LimitsHeader: []string{"impl", "of chain"}, LimitsRows: [][]string{{"tier", "0.97"}},
		Impls: []Impl{{Name: "tier", PerSec: 400, ReqPerAcq: 4, LatencyUS: []float64{1, 2}},
			{Name: "tier-handoff", PerSec: 21000, ReqPerAcq: 0.1, LatencyUS: []float64{1, 2}}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`class="verdict warn">⚠ FAIL: 0 violations`, "inside the window", "client CPU/acq", "of chain",
		"acquisitions per second (log scale)", ">1k<", ">10k<"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n, m := strings.Count(page, `<div class="scroll"><table`), strings.Count(page, "<table"); n != m-1 {
		t.Errorf("%d of %d tables scroll in a box; want all but the settings", n, m)
	}
	d.Violated = true
	buf.Reset()
	if err := Write(&buf, d); err != nil || !strings.Contains(buf.String(), `class="verdict fail">✘`) {
		t.Errorf("a violation is not a red banner: %v", err)
	}
	var labels []string
	for _, tk := range (countLogTicks{}).Ticks(100, 30000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "100 200 500 1k 2k 5k 10k 20k" {
		t.Errorf("log ticks %q", got)
	}
	for v, want := range map[float64]string{0.5: "0.5", 20: "20", 2500: "2.5k", 25000: "25k", 1.5e6: "1.5M"} {
		if got := formatCount(v); got != want {
			t.Errorf("formatCount(%v) = %q, want %q", v, got, want)
		}
	}
}
