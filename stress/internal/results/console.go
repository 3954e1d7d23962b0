package results

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Width is the most columns a line of the stress command's console
// output takes: a table wider than this is split into panels that each
// repeat its key columns, a cell too wide for any panel is wrapped inside
// its column, and notes are wrapped at it.
const Width = 120

// gap is the space between two columns.
const gap = 2

// minRoom is the least room a panel keeps for the columns after the keys,
// however wide the keys are; minWrap the least width a wrapped column is
// given beside others in a panel.
const (
	minRoom = 24
	minWrap = 30
)

// Table is a table for the console.
type Table struct {
	// Rows are the table's cells, the header first.
	Rows [][]string
	// Keys is the number of leading columns that name a row (at least
	// one): every panel starts with them, left-aligned.
	Keys int
	// Text left-aligns every column; otherwise the columns after the keys
	// hold figures and are right-aligned (but a wrapped one).
	Text bool
	// Indent starts every line.
	Indent string
}

// Print writes the table in as few panels as fit in Width columns, one
// after the other, separated by a blank line.
func (t Table) Print(w io.Writer) {
	if len(t.Rows) == 0 {
		return
	}
	widths := t.widths()
	keys := min(max(t.Keys, 1), len(widths))
	room := Width - utf8.RuneCountInString(t.Indent)
	for _, n := range widths[:keys] {
		room -= n + gap
	}
	l := layout(widths, keys, max(room, minRoom))
	for i, cols := range l.panels {
		if i > 0 {
			fmt.Fprintln(w)
		}
		for _, row := range t.Rows {
			t.printRow(w, row, cols, l.widths, func(c int) bool { return c < keys || t.Text || l.wrapped[c] })
		}
	}
}

// widths are the columns' natural widths: their widest cells.
func (t Table) widths() []int {
	var widths []int
	for _, row := range t.Rows {
		for c, cell := range row {
			if c == len(widths) {
				widths = append(widths, 0)
			}
			widths[c] = max(widths[c], utf8.RuneCountInString(cell))
		}
	}
	return widths
}

// tableLayout is how a table's columns are laid out: the columns of each
// panel (the keys first), each column's width, and which are wrapped.
type tableLayout struct {
	panels  [][]int
	widths  []int
	wrapped []bool
}

// layout splits the columns after the keys, in their order, into panels
// of at most room columns' width beside the keys. A column wider than
// room is wrapped: to the room left in its panel when that is at least
// minWrap, else in a panel of its own.
func layout(natural []int, keys, room int) tableLayout {
	l := tableLayout{widths: slices.Clone(natural), wrapped: make([]bool, len(natural))}
	var cur []int
	used := 0
	for c := keys; c < len(natural); c++ {
		left := room
		if len(cur) > 0 {
			left = room - used - gap
		}
		w := natural[c]
		switch {
		case w <= left:
		case w > room && left >= minWrap:
			w, l.wrapped[c] = left, true // wrapped beside the columns before it
		default:
			if len(cur) > 0 {
				l.panels, cur, used = append(l.panels, cur), nil, 0
			}
			if w > room {
				w, l.wrapped[c] = room, true // wrapped alone
			}
		}
		if len(cur) > 0 {
			used += gap
		}
		l.widths[c] = w
		cur, used = append(cur, c), used+w
	}
	if len(cur) > 0 || len(l.panels) == 0 {
		l.panels = append(l.panels, cur)
	}
	for i, p := range l.panels {
		l.panels[i] = append(seq(keys), p...)
	}
	return l
}

// seq is 0, 1, ..., n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// printRow writes the cells of row in columns cols, each wrapped to its
// width, on as many lines as its tallest cell needs.
func (t Table) printRow(w io.Writer, row []string, cols, widths []int, left func(int) bool) {
	lines := make([][]string, len(cols))
	height := 1
	for i, c := range cols {
		cell := ""
		if c < len(row) {
			cell = row[c]
		}
		lines[i] = wrap(cell, widths[c])
		height = max(height, len(lines[i]))
	}
	for j := range height {
		var b strings.Builder
		b.WriteString(t.Indent)
		for i, c := range cols {
			s := ""
			if j < len(lines[i]) {
				s = lines[i][j]
			}
			pad := strings.Repeat(" ", widths[c]-utf8.RuneCountInString(s))
			if i > 0 {
				b.WriteString(strings.Repeat(" ", gap))
			}
			if left(c) {
				b.WriteString(s + pad)
			} else {
				b.WriteString(pad + s)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// wrap breaks s into lines of at most width runes, between words where it
// can, inside a word longer than a line.
func wrap(s string, width int) []string {
	if utf8.RuneCountInString(s) <= width || width <= 0 {
		return []string{s}
	}
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(word) > width {
			if line != "" {
				out, line = append(out, line), ""
			}
			r := []rune(word)
			out, word = append(out, string(r[:width])), string(r[width:])
		}
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			out, line = append(out, line), word
		}
	}
	if line != "" || len(out) == 0 {
		out = append(out, line)
	}
	return out
}

// printNote writes text wrapped at Width, its first line after first and
// the others after indent.
func printNote(w io.Writer, first, indent, text string) {
	lines := wrap(text, Width-max(utf8.RuneCountInString(first), utf8.RuneCountInString(indent)))
	for i, line := range lines {
		if i == 0 {
			fmt.Fprintln(w, first+line)
			continue
		}
		fmt.Fprintln(w, indent+line)
	}
}
