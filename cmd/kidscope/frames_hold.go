package main

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/report"
)

// frameHold keeps the rows of `kidscope frames` in capture order while a
// request's row waits for its response: response_frame and a request's
// latency are known only when the response comes, after rows that must
// not be written before the request's. A row leaves when every row before
// it has left and it waits for nothing: its response came, or will not
// (the connection closed, the broker answered a later request of the
// connection, as brokers answer in order, or the request wants no answer:
// a Produce with acks=0).
//
// The hold is bounded: past max rows the oldest leaves at once, a request
// without its response_frame, and a response that comes for it later is
// counted (unlinked). Nothing waits without one that waits for a response,
// so a capture whose requests are answered holds few rows whatever its
// length.
type frameHold struct {
	write func(*report.FrameRecord) error
	max   int
	queue []*heldRow // in capture order; queue[head:] are held
	head  int
	// waiting are, by connection number, the held requests awaiting their
	// response, in the order they were sent.
	waiting  map[int][]*heldRow
	unlinked int64
	err      error
}

type heldRow struct {
	rec     report.FrameRecord
	at      kafka.FrameRef // where the request became complete
	waiting bool
}

// frameHoldCost is what a held row costs, rounded up: the record with its
// strings (endpoints, client and instance IDs, error codes), the entry of
// the queue and of the waiting list.
const frameHoldCost = 1 << 10

// frameHoldFor is the hold's size under a memory limit (bytes; 0: the
// default budget's): frames runs no rules, and takes the share the rules'
// findings have in analyze (budget.go).
func frameHoldFor(limit int64) int {
	if limit <= 0 {
		limit = defaultBudgetFor
	}
	return int(max(min(limit*15/100/frameHoldCost, 1<<24), 16))
}

func newFrameHold(max int, write func(*report.FrameRecord) error) *frameHold {
	return &frameHold{write: write, max: max, waiting: map[int][]*heldRow{}}
}

// add takes the row of event e of connection conn.
func (h *frameHold) add(rec *report.FrameRecord, conn int, e *decode.Event) {
	if h.err != nil {
		return
	}
	if e.Kind == decode.EventResponse && e.Msg.Matched {
		h.answered(conn, e, rec)
	}
	if e.Kind == decode.EventRequest && !e.Msg.NoResponse {
		row := &heldRow{rec: *rec, at: e.At, waiting: true}
		h.queue = append(h.queue, row)
		h.waiting[conn] = append(h.waiting[conn], row)
	} else if h.head == len(h.queue) {
		// Nothing held before it: written at once, not copied.
		h.err = h.write(rec)
		return
	} else {
		h.queue = append(h.queue, &heldRow{rec: *rec})
	}
	for len(h.queue)-h.head > h.max && h.err == nil {
		h.evict()
	}
	h.flush()
}

// answered links the response rec of connection conn to its held request.
// The requests sent before it still waiting get no answer: the broker
// answers a connection's requests in order (the decoder reckons so too).
func (h *frameHold) answered(conn int, e *decode.Event, rec *report.FrameRecord) {
	ws := h.waiting[conn]
	for i, row := range ws {
		if row.at.File == e.Msg.RequestAt.File && row.at.Frame == e.Msg.RequestAt.Frame &&
			row.rec.CorrelationID == e.Msg.Response.CorrelationID {
			row.rec.SetResponse(rec)
			for _, r := range ws[:i+1] {
				r.waiting = false
			}
			h.setWaiting(conn, ws[i+1:])
			return
		}
	}
	// Its request was written before it came: the hold was full.
	h.unlinked++
}

func (h *frameHold) setWaiting(conn int, ws []*heldRow) {
	if len(ws) == 0 {
		delete(h.waiting, conn)
		return
	}
	h.waiting[conn] = ws
}

// closed: no response comes on connection conn any more.
func (h *frameHold) closed(conn int) {
	for _, r := range h.waiting[conn] {
		r.waiting = false
	}
	delete(h.waiting, conn)
	h.flush()
}

// evict writes the oldest held row, done waiting or not.
func (h *frameHold) evict() {
	row := h.queue[h.head]
	if row.waiting {
		conn := row.rec.ConnectionID
		ws := h.waiting[conn]
		for i, r := range ws {
			if r == row {
				h.setWaiting(conn, append(ws[:i:i], ws[i+1:]...))
				break
			}
		}
		row.waiting = false
	}
	h.pop()
	h.err = h.write(&row.rec)
}

// flush writes the rows at the front that wait for nothing.
func (h *frameHold) flush() {
	for h.err == nil && h.head < len(h.queue) && !h.queue[h.head].waiting {
		row := h.queue[h.head]
		h.pop()
		h.err = h.write(&row.rec)
	}
}

func (h *frameHold) pop() {
	h.queue[h.head] = nil
	h.head++
	switch {
	case h.head == len(h.queue):
		h.queue, h.head = h.queue[:0], 0
	case h.head > 1024 && h.head > len(h.queue)/2:
		// Keep the slice from growing with the run: move the held rows
		// to its front once the written ones are the larger part.
		n := copy(h.queue, h.queue[h.head:])
		clear(h.queue[n:])
		h.queue, h.head = h.queue[:n], 0
	}
}

// finish writes every row still held: the run is over, no response comes.
func (h *frameHold) finish() error {
	for h.err == nil && h.head < len(h.queue) {
		row := h.queue[h.head]
		row.waiting = false
		h.pop()
		h.err = h.write(&row.rec)
	}
	clear(h.waiting)
	return h.err
}
