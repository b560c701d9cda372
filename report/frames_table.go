package report

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// framesTable collects rows and renders them at the end: column widths need
// every row, and TIME counts from the first packet, known at the end. It
// is for reading small captures, and keeps the first maxFrameRows; the
// other formats stream every record.
//
// The layout is compact, to fit frameTableWidth columns: no borders, the
// file once above its rows (again where the rows pass to another input),
// the connection by its number (as analyze numbers them; the endpoints are
// listed once below the rows), columns every row leaves empty left out,
// and the widest text cut with "…" when the rows would not fit.
type framesTable struct {
	w       *bufio.Writer
	rows    []tableRow
	conns   map[int]string // connection number: client → broker
	max     int
	dropped int64
	// after, when set, gives the lines written under row i (the
	// per-connection view's findings, ladder.go): already escaped.
	after func(i int) []string
}

// tableRow is one message of the table: its cells (escaped), and what the
// layout needs besides.
type tableRow struct {
	file  string
	at    time.Time
	cells [tableCols]string
}

// maxFrameRows caps the rows the frames table keeps.
const maxFrameRows = 100000

// frameTableWidth is the width the table is cut to fit.
const frameTableWidth = 120

// The table's columns.
const (
	colFrame = iota
	colTime
	colConn
	colDir
	colAPI
	colCorr
	colPair
	colLatency
	colClientID
	colInstanceID
	colError
	tableCols
)

var tableHeader = [tableCols]string{"FRAME", "TIME", "CONN", "", "API", "CORR", "PAIR", "LATENCY", "CLIENT ID", "INSTANCE ID", "ERROR"}

// tableRight are the columns of numbers, right-aligned.
var tableRight = [tableCols]bool{colFrame: true, colTime: true, colConn: true, colCorr: true, colPair: true, colLatency: true}

// tableCuts are the steps that narrow the table to fit, in order: each
// cuts its column down to the width given, as far as needed. The instance
// ID goes first, to its first 10 characters (as wide as its heading);
// then long error lists, client IDs and API names, then each to its
// narrowest, the error last. Numbers are never cut.
var tableCuts = []struct{ col, width int }{
	{colInstanceID, 11}, {colError, 24}, {colClientID, 16}, {colAPI, 24},
	{colClientID, 12}, {colAPI, 16}, {colError, 12}, {colPair, 8},
}

// tableAlways are the columns shown even when every row leaves them empty.
var tableAlways = [tableCols]bool{colFrame: true, colTime: true, colConn: true, colDir: true, colAPI: true, colCorr: true}

func (f *framesTable) Add(r *FrameRecord) error {
	if len(f.rows) >= f.max {
		f.dropped++
		return nil
	}
	row := tableRow{file: shown(r.File), at: r.At}
	c := &row.cells
	c[colFrame] = strconv.FormatInt(r.Frame, 10)
	c[colConn] = strconv.Itoa(r.ConnectionID)
	c[colDir] = "→"
	c[colAPI] = shown(r.APIName)
	if r.APIKey != nil {
		c[colAPI] = fmt.Sprintf("%s(%d) v%s", shown(r.APIName), *r.APIKey, optInt(r.APIVersion))
	}
	c[colCorr] = strconv.Itoa(int(r.CorrelationID))
	c[colClientID] = shown(optStr(r.ClientID))
	c[colInstanceID] = shown(optStr(r.InstanceID))
	c[colError] = shown(errorText(r.ErrorCodes))
	// PAIR is the frame of the other half: a request's response, a
	// response's request. LATENCY is said once, on the response.
	pair, pairFile := r.ResponseFrame, r.ResponseFile
	if r.Direction == "response" {
		c[colDir] = "←"
		pair, pairFile = r.RequestFrame, r.RequestFile
		if r.Latency != nil {
			c[colLatency] = r.Latency.table()
		}
	}
	if pair != nil {
		c[colPair] = strconv.FormatInt(*pair, 10)
		if pairFile != "" {
			c[colPair] = shown(pairFile) + ":" + c[colPair]
		}
	}
	if f.conns == nil {
		f.conns = map[int]string{}
	}
	if _, ok := f.conns[r.ConnectionID]; !ok {
		f.conns[r.ConnectionID] = shown(r.Client) + " → " + shown(r.Broker)
	}
	f.rows = append(f.rows, row)
	return nil
}

// table writes s in seconds with six decimals, as TIME is written.
func (s Seconds) table() string {
	return seconds6(time.Duration(s))
}

// seconds6 writes d in seconds, rounded to the microsecond.
func seconds6(d time.Duration) string {
	us := int64(d.Round(time.Microsecond) / time.Microsecond)
	neg := ""
	if us < 0 {
		neg, us = "-", -us
	}
	return fmt.Sprintf("%s%d.%06d", neg, us/1e6, us%1e6)
}

func (f *framesTable) Finish(s FramesSummary) error {
	if len(f.rows) > 0 {
		f.render(s.Start)
	}
	if f.dropped > 0 {
		fmt.Fprintf(f.w, "%s not listed: the table keeps the first %s (-o tsv, csv, json and ndjson write every one)\n",
			plural(f.dropped, "message", "messages"), commas(int64(len(f.rows))))
	}
	fmt.Fprintln(f.w, s.String())
	return f.w.Flush()
}

func (f *framesTable) render(start time.Time) {
	if start.IsZero() || f.rows[0].at.Before(start) {
		start = f.rows[0].at
	}
	var width [tableCols]int
	var used [tableCols]bool
	for i := range f.rows {
		c := &f.rows[i].cells
		c[colTime] = seconds6(f.rows[i].at.Sub(start))
		for j, v := range c {
			if v != "" {
				used[j] = true
				width[j] = max(width[j], twwidth.Width(v))
			}
		}
	}
	var cols []int
	for j := range tableCols {
		if used[j] || tableAlways[j] {
			cols = append(cols, j)
			width[j] = max(width[j], twwidth.Width(tableHeader[j]))
		}
	}
	fitWidths(&width, cols)

	line := func(cells *[tableCols]string) {
		var b strings.Builder
		for k, j := range cols {
			if k > 0 {
				b.WriteString("  "[:gapBefore(j)])
			}
			v := cells[j]
			if w := twwidth.Width(v); w > width[j] {
				v = cutCell(j, v, width[j])
			}
			pad := strings.Repeat(" ", width[j]-twwidth.Width(v))
			if tableRight[j] {
				b.WriteString(pad + v)
			} else {
				b.WriteString(v + pad)
			}
		}
		f.w.WriteString(strings.TrimRight(b.String(), " "))
		f.w.WriteByte('\n')
	}
	file := ""
	for i := range f.rows {
		r := &f.rows[i]
		if i == 0 || r.file != file {
			file = r.file
			f.w.WriteString(file + "\n")
			if i == 0 {
				line(&tableHeader)
			}
		}
		line(&r.cells)
		if f.after != nil {
			for _, l := range f.after(i) {
				f.w.WriteString(l + "\n")
			}
		}
	}
	// The connections the rows name, by number.
	ids := make([]int, 0, len(f.conns))
	for id := range f.conns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w := max(twwidth.Width("CONN"), len(strconv.Itoa(ids[len(ids)-1])))
	fmt.Fprintf(f.w, "\n%*s  CLIENT → BROKER\n", w, "CONN")
	for _, id := range ids {
		fmt.Fprintf(f.w, "%*d  %s\n", w, id, f.conns[id])
	}
}

// gapBefore is the space before column j: one around the arrow, two
// elsewhere.
func gapBefore(j int) int {
	if j == colDir || j == colAPI {
		return 1
	}
	return 2
}

// fitWidths narrows the text columns by tableCuts until the table fits
// frameTableWidth or every cut is made.
func fitWidths(width *[tableCols]int, cols []int) {
	total := 0
	shown := [tableCols]bool{}
	for k, j := range cols {
		if k > 0 {
			total += gapBefore(j)
		}
		total += width[j]
		shown[j] = true
	}
	for _, c := range tableCuts {
		if total <= frameTableWidth {
			return
		}
		if !shown[c.col] || width[c.col] <= c.width {
			continue
		}
		n := min(width[c.col]-c.width, total-frameTableWidth)
		width[c.col] -= n
		total -= n
	}
}

// cutCell shortens the value v of column j to w columns. An API's name is
// cut before its key and version, which stay whole when there is room.
func cutCell(j int, v string, w int) string {
	if j == colAPI {
		if i := strings.LastIndexByte(v, '('); i > 0 {
			if room := w - twwidth.Width(v[i:]); room >= 4 {
				return cut(v[:i], room) + v[i:]
			}
		}
	}
	return cut(v, w)
}

// cut shortens s to w columns, the last being "…".
func cut(s string, w int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		rw := twwidth.Width(string(r))
		if n+rw > w-1 {
			break
		}
		b.WriteRune(r)
		n += rw
	}
	return b.String() + "…"
}
