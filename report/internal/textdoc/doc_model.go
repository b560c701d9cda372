package textdoc

import "strings"

// Span is a piece of text. Style names how it stands out ("" for plain
// text): the terminal writer asks its caller how to paint a style,
// Markdown makes a styled span strong, HTML gives it a class.
type Span struct {
	Text  string
	Style string
}

// Line is spans written one after the other.
type Line []Span

// Plain is a line of one unstyled span.
func Plain(s string) Line { return Line{{Text: s}} }

// String is the line's text, without styles.
func (l Line) String() string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(s.Text)
	}
	return b.String()
}

// Pair is a key and its values, a line each.
type Pair struct {
	Key    string
	Values []Line
}

// Grid is a table: a header (a cell may hold several lines, separated by
// "\n") and rows of cells of lines.
type Grid struct {
	Header []string
	Rows   [][][]string // row, cell, lines
}

// Kind is what a block is.
type Kind int

const (
	Heading1 Kind = iota
	Heading2
	Para
	KV
	Table
)

// Block is a part of a document: a heading or paragraph (Text), a
// key/value list (Pairs) or a table (Grid).
type Block struct {
	Kind  Kind
	Text  Line
	Pairs []Pair
	Grid  *Grid
}
