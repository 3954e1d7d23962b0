package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// HeatMap is a grid of ratios (an implementation against the baseline, one
// per matrix cell), drawn as SVG: a ratio above 1 is green, below 1 red,
// darker the further from 1 (by the square root of its log, saturating at
// 64× and 1/64×, so that 2× and ½× are equally strong and a ratio just
// below 1 still shows); a missing cell is grey.
type HeatMap struct {
	Title      string
	Rows, Cols []string    // labels
	Values     [][]float64 // [row][col]; NaN or ≤ 0: missing
	// Labels, when set, replace the printed value of a cell (e.g. with the
	// spread of repeated runs); [row][col].
	Labels [][]string
}

// heat-map geometry, in SVG user units (pixels).
const (
	hmCellW, hmCellH = 100, 30
	hmLeft, hmTop    = 80, 80
	hmPad            = 12
	hmMaxLog2        = 6 // 64×: the darkest green; ½^6: the darkest red
)

// SVG renders the heat map. It fails when the rows of Values (or Labels)
// do not match the labels.
func (h HeatMap) SVG() (string, error) {
	if len(h.Values) != len(h.Rows) {
		return "", fmt.Errorf("heat map %q: %d rows of values for %d row labels", h.Title, len(h.Values), len(h.Rows))
	}
	for i, row := range h.Values {
		if len(row) != len(h.Cols) {
			return "", fmt.Errorf("heat map %q: row %d has %d values for %d columns", h.Title, i, len(row), len(h.Cols))
		}
		if h.Labels != nil && (len(h.Labels) != len(h.Rows) || len(h.Labels[i]) != len(h.Cols)) {
			return "", fmt.Errorf("heat map %q: labels do not match the grid", h.Title)
		}
	}
	// Wide enough for the grid and for the title (about 8 units a
	// character at its size).
	w := max(hmLeft+len(h.Cols)*hmCellW+hmPad, 2*hmPad+8*len([]rune(h.Title)))
	ht := hmTop + len(h.Rows)*hmCellH + hmPad
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Liberation Sans, Arial, sans-serif">`, w, ht, w, ht)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`, hmPad, html.EscapeString(h.Title))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#555">processes×goroutines ↓</text>`, hmPad, hmTop-6)
	for j, c := range h.Cols {
		x := hmLeft + j*hmCellW + hmCellW/2
		// Column labels are "N paths, hold D": two lines.
		first, second, _ := strings.Cut(c, ", ")
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle">%s</text>`, x, hmTop-38, html.EscapeString(first))
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle">%s</text>`, x, hmTop-24, html.EscapeString(second))
	}
	for i, r := range h.Rows {
		y := hmTop + i*hmCellH
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="end">%s</text>`, hmLeft-6, y+hmCellH/2+4, html.EscapeString(r))
		for j := range h.Cols {
			v := h.Values[i][j]
			x := hmLeft + j*hmCellW
			fill, ink := heatColor(v)
			label := "–"
			if v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
				label = ratioLabel(v)
			}
			if h.Labels != nil && h.Labels[i][j] != "" {
				label = h.Labels[i][j]
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff"/>`, x, y, hmCellW, hmCellH, fill)
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="middle" fill="%s">%s</text>`,
				x+hmCellW/2, y+hmCellH/2+4, ink, html.EscapeString(label))
		}
	}
	b.WriteString(`</svg>`)
	return b.String(), nil
}

// ratioLabel writes a ratio with two significant digits: 0.87×, 1.4×, 52×.
func ratioLabel(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f×", v)
	case v >= 1:
		return fmt.Sprintf("%.1f×", v)
	default:
		return fmt.Sprintf("%.2f×", v)
	}
}

// heatColor returns the fill of a ratio and the ink that reads on it.
func heatColor(v float64) (fill, ink string) {
	if !(v > 0) || math.IsInf(v, 0) {
		return "#dddddd", "#555555"
	}
	// The square root of the log spreads the ratios near 1, the ones that
	// decide "ahead or behind", over more of the scale.
	l := math.Min(1, math.Abs(math.Log2(v))/hmMaxLog2)
	t := math.Copysign(math.Sqrt(l), math.Log2(v))
	// From white at 1× to a saturated green (above) or red (below).
	var r, g, bl float64
	if t >= 0 {
		r, g, bl = lerp(255, 26, t), lerp(255, 128, t), lerp(255, 60, t)
	} else {
		r, g, bl = lerp(255, 190, -t), lerp(255, 30, -t), lerp(255, 30, -t)
	}
	// Relative luminance decides dark or light text.
	ink = "#111111"
	if 0.2126*r+0.7152*g+0.0722*bl < 140 {
		ink = "#ffffff"
	}
	return fmt.Sprintf("#%02x%02x%02x", int(r), int(g), int(bl)), ink
}

func lerp(a, b, t float64) float64 { return a + (b-a)*t }
