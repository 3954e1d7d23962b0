package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	d := Data{
		Title: "t", Generated: time.Now(), OK: false, Verdict: "FAIL: 1 violation",
		Failures: []string{"x: 1 overlap"},
		Header:   []string{"impl", "acq/s"}, Rows: [][]string{{"a", "10"}, {"b", "<20>"}},
		Settings: [][2]string{{"procs", "2"}},
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
	for _, want := range []string{"FAIL: 1 violation", "x: 1 overlap", "&lt;20&gt;", "proc 1"} {
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
