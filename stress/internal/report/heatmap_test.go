package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestHeatMap(t *testing.T) {
	h := HeatMap{
		Title:  "tier <strict>, standalone",
		Rows:   []string{"1×8", "4×1000"},
		Cols:   []string{"1 path, hold 0", "16 paths, hold 1ms", "1000 paths, hold 0"},
		Values: [][]float64{{2, 0.5, math.NaN()}, {1, 64, 0}},
	}
	s, err := h.SVG()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s, "<rect"); n != 6 {
		t.Errorf("%d cells drawn, want 6", n)
	}
	for _, want := range []string{
		"tier &lt;strict&gt;, standalone",             // labels are escaped
		">2.0×<", ">0.50×<", ">1.0×<", ">64×<", ">–<", // values, and missing ones
		"16 paths", "hold 1ms", "4×1000",
		`fill="#ffffff"`, // 1×: white
		`fill="#dddddd"`, // missing: grey
	} {
		if !strings.Contains(s, want) {
			t.Errorf("heat map lacks %q", want)
		}
	}
	// Ahead is green, behind is red, and equally far from 1 on the log
	// scale is equally strong.
	up, _ := heatColor(2)
	down, _ := heatColor(0.5)
	var r1, g1, b1, r2, g2, b2 int
	if _, err := fmtSscanf(up, &r1, &g1, &b1); err != nil {
		t.Fatal(err)
	}
	if _, err := fmtSscanf(down, &r2, &g2, &b2); err != nil {
		t.Fatal(err)
	}
	if !(g1 > r1 && r2 > g2) {
		t.Errorf("2× is %s, ½× is %s: want green and red", up, down)
	}
	if 255-r1 == 0 || 255-g2 == 0 {
		t.Errorf("a ratio of 2 or ½ is drawn white: %s, %s", up, down)
	}
	if near, _ := heatColor(0.9); near == "#ffffff" {
		t.Error("0.9× is drawn as white as 1×: a cell just behind must show")
	}
	if dark, ink := heatColor(1000); dark != "#1a803c" || ink != "#ffffff" {
		t.Errorf("beyond the scale: %s on %s, want the darkest green with white text", ink, dark)
	}

	h.Labels = [][]string{{"a", "", ""}, {"", "", "FAIL"}}
	s, err = h.SVG()
	if err != nil || !strings.Contains(s, ">FAIL<") || !strings.Contains(s, ">0.50×<") {
		t.Errorf("labels: %v\n%s", err, s)
	}
	for _, bad := range []HeatMap{
		{Rows: []string{"a"}, Cols: []string{"x"}},
		{Rows: []string{"a"}, Cols: []string{"x", "y"}, Values: [][]float64{{1}}},
		{Rows: []string{"a"}, Cols: []string{"x"}, Values: [][]float64{{1}}, Labels: [][]string{{}}},
	} {
		if _, err := bad.SVG(); err == nil {
			t.Errorf("mismatched heat map %+v drawn", bad)
		}
	}
}

func TestWriteMatrix(t *testing.T) {
	var buf bytes.Buffer
	d := MatrixData{
		Title: "matrix", Generated: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC), Verdict: "INCOMPLETE", Progress: "1 of 2 cells",
		Maps:   []HeatMap{{Title: "tier", Rows: []string{"1×1"}, Cols: []string{"1 path, hold 0"}, Values: [][]float64{{1.5}}}},
		Header: []string{"impl", "acq/s"}, Rows: [][]string{{"tier", "<b>"}},
		Settings: [][2]string{{"plan", "quick"}},
	}
	if err := WriteMatrix(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"<svg", ">1.5×<", "1 of 2 cells", "&lt;b&gt;", "2026-11-22 08:00:00", `class="verdict warn">⚠ INCOMPLETE`,
		`<div class="scroll tall"><table>`,
		".verdict { padding: 10px 14px;", ".maps { display: flex;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The stress run's page shares the style.
	buf.Reset()
	if err := Write(&buf, Data{Title: "run", Impls: []Impl{{Name: "tier", PerSec: 1, ReqPerAcq: 1, LatencyUS: []float64{1, 2}}}}); err != nil || !strings.Contains(buf.String(), ".fail { background: #fbe3e3;") {
		t.Errorf("the run report lost the shared style: %v", err)
	}
	buf.Reset()
	d.Violated, d.Verdict = true, "FAIL: 1 violation"
	if err := WriteMatrix(&buf, d); err != nil || !strings.Contains(buf.String(), `class="verdict fail">✘ FAIL: 1 violation`) {
		t.Errorf("a violation is not a red banner: %v", err)
	}
	d.Maps[0].Values = nil
	if err := WriteMatrix(&buf, d); err == nil {
		t.Error("a bad heat map was rendered")
	}
}

// fmtSscanf reads a #rrggbb color.
func fmtSscanf(c string, r, g, b *int) (int, error) { return fmt.Sscanf(c, "#%02x%02x%02x", r, g, b) }
