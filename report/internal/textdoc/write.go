package textdoc

import (
	"bufio"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Width is the terminal width the terminal writer lays out for: tables fit
// it when the values are short, and grow wider (still correct) when they
// are not.
const Width = 80

// Painter writes a styled span's text (already escaped) for a terminal:
// with colour, or as it is.
type Painter func(text, style string) string

// render writes a line for a terminal. Every piece of text goes through
// Escape, whether or not it holds a capture's strings: none can reach the
// terminal raw, wherever a later change puts it.
func (l Line) render(paint Painter) string {
	var b strings.Builder
	for _, s := range l {
		if s.Style != "" && paint != nil {
			b.WriteString(paint(Escape(s.Text), s.Style))
		} else {
			b.WriteString(Escape(s.Text))
		}
	}
	return b.String()
}

// WriteTerminal writes the blocks for a terminal of Width columns, styled
// spans through paint (nil: plain).
func WriteTerminal(w io.Writer, blocks []Block, paint Painter) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	for i, b := range blocks {
		switch b.Kind {
		case Heading1:
			if i > 0 {
				bw.WriteString("\n")
			}
			bw.WriteString(b.Text.render(paint) + "\n")
		case Heading2:
			bw.WriteString("\n" + b.Text.render(paint) + "\n")
		case Para:
			// Wrap the plain text, then paint the spans again: only
			// whole spans are painted, and wrapping keeps them whole
			// unless they are longer than a line.
			for _, l := range WrapLine(b.Text, Width) {
				bw.WriteString(l.render(paint) + "\n")
			}
		case KV:
			keyW := 0
			for _, p := range b.Pairs {
				keyW = max(keyW, len(p.Key))
			}
			keyW += 2
			for _, p := range b.Pairs {
				for j, v := range p.Values {
					for k, l := range WrapLine(v, Width-2-keyW) {
						key := ""
						if j == 0 && k == 0 {
							key = p.Key
						}
						bw.WriteString(strings.TrimRight("  "+key+strings.Repeat(" ", keyW-len(key))+l.render(paint), " ") + "\n")
					}
				}
			}
		case Table:
			if err := WriteGrid(bw, b.Grid, false); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// WrapLine wraps a line of spans at spaces to width, keeping each piece's
// style. A line that fits is returned as it is.
func WrapLine(l Line, width int) []Line {
	if len([]rune(l.String())) <= width {
		return []Line{l}
	}
	var words [][]Span
	var cur []Span
	for _, s := range l {
		for i, p := range strings.Split(s.Text, " ") {
			if i > 0 && len(cur) > 0 {
				words = append(words, cur)
				cur = nil
			}
			if p != "" {
				piece := s
				piece.Text = p
				cur = append(cur, piece)
			}
		}
	}
	if len(cur) > 0 {
		words = append(words, cur)
	}
	var out []Line
	var ln Line
	n := 0
	for _, wd := range words {
		wn := 0
		for _, p := range wd {
			wn += len([]rune(p.Text))
		}
		if n > 0 && n+1+wn > width {
			out = append(out, ln)
			ln, n = nil, 0
		}
		if n > 0 {
			ln = append(ln, Span{Text: " "})
			n++
		}
		ln = append(ln, wd...)
		n += wn
	}
	if len(ln) > 0 || len(out) == 0 {
		out = append(out, ln)
	}
	return out
}

// WriteGrid writes a table for a terminal (box drawing) or as Markdown,
// every cell's lines through Escape (and MarkdownEscape).
func WriteGrid(w io.Writer, g *Grid, md bool) error {
	multi := false
	rows := make([][]string, len(g.Rows))
	for i, r := range g.Rows {
		rows[i] = make([]string, len(r))
		for j, c := range r {
			esc := make([]string, len(c))
			for k, l := range c {
				esc[k] = Escape(l)
				if md {
					esc[k] = MarkdownEscape(esc[k])
				}
			}
			if md {
				rows[i][j] = strings.Join(esc, "<br>")
			} else {
				rows[i][j] = strings.Join(esc, "\n")
				multi = multi || len(c) > 1
			}
		}
	}
	opts := []tablewriter.Option{
		tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft), tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithEastAsian(tw.Off),
	}
	header := make([]any, len(g.Header))
	for i, h := range g.Header {
		if md {
			h = MarkdownEscape(h)
		}
		header[i] = h
	}
	if md {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	} else if multi {
		opts = append(opts, tablewriter.WithRendition(tw.Rendition{Settings: tw.Settings{Separators: tw.Separators{BetweenRows: tw.On}}}))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(header...)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// MarkdownLine is a line in Markdown: escaped, styled spans strong.
func MarkdownLine(l Line) string {
	var b strings.Builder
	for _, s := range l {
		t := MarkdownEscape(Escape(s.Text))
		if s.Style != "" && s.Text != "" {
			t = "**" + t + "**"
		}
		b.WriteString(t)
	}
	return b.String()
}

// WriteMarkdown writes the blocks as a GitHub-flavoured Markdown document
// under a level-1 title.
func WriteMarkdown(w io.Writer, title string, blocks []Block) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("# " + MarkdownEscape(Escape(title)) + "\n")
	for _, b := range blocks {
		bw.WriteString("\n")
		switch b.Kind {
		case Heading1:
			bw.WriteString("## " + MarkdownEscape(Escape(b.Text.String())) + "\n")
		case Heading2:
			bw.WriteString("### " + MarkdownEscape(Escape(b.Text.String())) + "\n")
		case Para:
			bw.WriteString(MarkdownLine(b.Text) + "\n")
		case KV:
			for _, p := range b.Pairs {
				if len(p.Values) == 1 {
					bw.WriteString("- **" + MarkdownEscape(p.Key) + "**: " + MarkdownLine(p.Values[0]) + "\n")
					continue
				}
				bw.WriteString("- **" + MarkdownEscape(p.Key) + "**:\n")
				for _, v := range p.Values {
					bw.WriteString("  - " + MarkdownLine(v) + "\n")
				}
			}
		case Table:
			if err := WriteGrid(bw, b.Grid, true); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
