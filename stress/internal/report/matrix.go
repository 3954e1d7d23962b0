package report

import (
	"fmt"
	"html/template"
	"io"
	"time"
)

// MatrixData is what the report of a stress matrix (stress -matrix) shows:
// the verdict, heat maps of each implementation's throughput against the
// baseline per cell, and the table of every cell.
type MatrixData struct {
	Title     string
	Generated time.Time
	OK        bool
	Violated  bool // a violation of mutual exclusion: red; otherwise a failure is amber
	Verdict   string
	Failures  []string
	Progress  string // "72 of 144 cells" while the matrix is still running
	Maps      []HeatMap
	MapNote   string
	Header    []string
	Rows      [][]string
	TableNote string
	Settings  [][2]string
}

// WriteMatrix renders the matrix report.
func WriteMatrix(w io.Writer, d MatrixData) error {
	maps := make([]template.HTML, 0, len(d.Maps))
	for _, m := range d.Maps {
		s, err := m.SVG()
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		maps = append(maps, template.HTML(s)) // SVG made here from our own numbers, labels escaped
	}
	return matrixPage.Execute(w, struct {
		MatrixData
		SVGs []template.HTML
	}{d, maps})
}

// commonCSS is the style both pages share: headings, notes, the verdict.
const commonCSS = `{{define "common-css"}}h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #666; font-size: 13px; }
.verdict { padding: 10px 14px; border-radius: 6px; font-size: 16px; font-weight: bold; margin: 16px 0; }
.pass { background: #e3f4e1; color: #1d5e1a; border: 1px solid #9ccf97; }
.fail { background: #fbe3e3; color: #8a1414; border: 1px solid #e59a9a; }
.warn { background: #fff4d6; color: #6b4a00; border: 1px solid #e6c36a; }
.scroll { max-width: 100%; overflow-x: auto; margin: 6px 0; }
{{end}}{{define "verdict"}}<div class="verdict {{if .OK}}pass{{else if .Violated}}fail{{else}}warn{{end}}">{{if .OK}}✔{{else if .Violated}}✘{{else}}⚠{{end}} {{.Verdict}}</div>{{end}}`

var matrixPage = template.Must(template.Must(template.New("matrix").Parse(commonCSS)).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 24px; color: #222; }
{{template "common-css"}}
.sub { max-width: 1100px; }
.maps { display: flex; flex-wrap: wrap; gap: 20px; }
table { border-collapse: collapse; font-size: 12px; }
th, td { padding: 3px 7px; border-bottom: 1px solid #e5e5e5; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; position: sticky; top: 0; }
.tall { max-height: 80vh; overflow-y: auto; }
.settings td { text-align: left; }
pre { background: #f7f7f7; padding: 8px; font-size: 12px; overflow-x: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<div class="sub">generated {{.Generated.Format "2006-01-02 15:04:05 MST"}}{{if .Progress}} · {{.Progress}}{{end}}</div>
{{template "verdict" .}}
{{if .Failures}}<pre>{{range .Failures}}{{.}}
{{end}}</pre>{{end}}

<h2>Throughput against the baseline, per cell</h2>
<p class="sub">{{.MapNote}}</p>
<div class="maps">{{range .SVGs}}<div>{{.}}</div>{{end}}</div>

<h2>Every cell</h2>
<p class="sub">{{.TableNote}}</p>
<div class="scroll tall"><table>
<tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>

<h2>Settings</h2>
<table class="settings">
{{range .Settings}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>
{{end}}</table>
</body>
</html>
`))
