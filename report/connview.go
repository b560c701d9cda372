package report

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// ConnView is the per-connection view (`analyze --connection N`): the
// connection's messages in capture order, as frames' compact table lists
// them, with each finding written under the frame it names.
type ConnView struct {
	Files []string
	Conn  int
	// Messages are the connection's requests and responses in order; At
	// holds each one's frame, for the findings to find theirs.
	Messages []FrameRecord
	At       []kafka.FrameRef
	// NotKept counts the messages past the view's cap, not listed.
	NotKept int64
	// Findings are the findings on the connection (the scoped Result's).
	Findings []rules.Finding
	Start    time.Time
}

// WriteConnView writes the view. A finding whose frame is not among the
// messages (a stream finding at a packet that carried no message, or a
// message past the cap) is listed after them, with its frame.
func WriteConnView(w io.Writer, l *ConnView, color bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "\nCONNECTION %d: %s in order, findings under their frame\n", l.Conn, plural(int64(len(l.Messages))+l.NotKept, "message", "messages"))
	row := map[kafka.FrameRef]int{}
	for i, at := range l.At {
		k := kafka.FrameRef{File: at.File, Frame: at.Frame}
		if _, ok := row[k]; !ok {
			row[k] = i
		}
	}
	under := map[int][]string{}
	var rest []string
	for i := range l.Findings {
		f := &l.Findings[i]
		text := "    ^ " + FormatFindingText(l.Files, f, color)
		if j, ok := row[kafka.FrameRef{File: f.At.File, Frame: f.At.Frame}]; ok {
			under[j] = append(under[j], text)
		} else {
			rest = append(rest, text)
		}
	}
	t := &framesTable{w: bw, max: len(l.Messages), after: func(i int) []string { return under[i] }}
	for i := range l.Messages {
		if err := t.Add(&l.Messages[i]); err != nil {
			return err
		}
	}
	if len(t.rows) > 0 {
		t.render(l.Start)
	} else {
		fmt.Fprintln(bw, "no Kafka messages on this connection")
	}
	if l.NotKept > 0 {
		fmt.Fprintf(bw, "%s not listed: the view keeps the first %s (kidscope frames --connection %d lists every one)\n",
			plural(l.NotKept, "message", "messages"), commas(int64(len(l.Messages))), l.Conn)
	}
	if len(rest) > 0 {
		fmt.Fprintln(bw, "findings at frames not listed above:")
		for _, s := range rest {
			fmt.Fprintln(bw, s)
		}
	}
	return bw.Flush()
}
