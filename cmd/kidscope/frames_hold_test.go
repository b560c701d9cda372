package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/report"
)

// holdRun feeds a frameHold as the sink does and records what it writes.
type holdRun struct {
	h       *frameHold
	out     []string
	pending map[string]*decode.Event // requests by conn/corr
}

func newHoldRun(max int) *holdRun {
	r := &holdRun{pending: map[string]*decode.Event{}}
	r.h = newFrameHold(max, func(rec *report.FrameRecord) error {
		s := fmt.Sprintf("%d", rec.Frame)
		if rec.ResponseFrame != nil {
			s += fmt.Sprintf("→%d", *rec.ResponseFrame)
		}
		if rec.RequestFrame != nil {
			s += fmt.Sprintf("←%d", *rec.RequestFrame)
		}
		r.out = append(r.out, s)
		return nil
	})
	return r
}

func (r *holdRun) event(conn int, e *decode.Event) {
	c := &kafka.Conn{ID: conn}
	rec := report.NewFrameRecord([]string{"f"}, c, e, report.UUIDKafka)
	r.h.add(&rec, conn, e)
}

func (r *holdRun) req(conn int, frame int64, corr int32) {
	e := &decode.Event{Kind: decode.EventRequest, Side: kafka.ToBroker,
		At: kafka.FrameRef{Frame: frame, Time: time.Unix(frame, 0)}}
	e.Msg.Request.CorrelationID = corr
	r.pending[fmt.Sprint(conn, "/", corr)] = e
	r.event(conn, e)
}

func (r *holdRun) resp(conn int, frame int64, corr int32) {
	e := &decode.Event{Kind: decode.EventResponse, Side: kafka.ToClient,
		At: kafka.FrameRef{Frame: frame, Time: time.Unix(frame, 0)}}
	e.Msg.Response.CorrelationID = corr
	if q := r.pending[fmt.Sprint(conn, "/", corr)]; q != nil {
		e.Msg.Matched, e.Msg.Request, e.Msg.RequestAt = true, q.Msg.Request, q.At
	}
	r.event(conn, e)
}

func (r *holdRun) got() string { return strings.Join(r.out, " ") }

func TestFrameHold(t *testing.T) {
	t.Run("capture order, linked", func(t *testing.T) {
		r := newHoldRun(100)
		r.req(1, 1, 10)
		r.req(2, 2, 20)
		r.resp(2, 3, 20)
		if r.got() != "" {
			t.Errorf("written before the first request's response: %s", r.got())
		}
		r.resp(1, 4, 10)
		r.resp(1, 5, 99) // unmatched: written at once
		if want := "1→4 2→3 3←2 4←1 5"; r.got() != want {
			t.Errorf("got %s, want %s", r.got(), want)
		}
		if len(r.h.queue) != 0 || len(r.h.waiting) != 0 {
			t.Errorf("held after all answered: %d rows, %d connections", len(r.h.queue), len(r.h.waiting))
		}
	})
	t.Run("answered in order", func(t *testing.T) {
		// The broker answers a connection's requests in order: its answer
		// to the second says the first gets none.
		r := newHoldRun(100)
		r.req(1, 1, 10)
		r.req(1, 2, 11)
		r.resp(1, 3, 11)
		if want := "1 2→3 3←2"; r.got() != want {
			t.Errorf("got %s, want %s", r.got(), want)
		}
	})
	t.Run("closed", func(t *testing.T) {
		r := newHoldRun(100)
		r.req(1, 1, 10)
		r.req(2, 2, 20)
		r.resp(2, 3, 20)
		r.h.closed(1)
		if want := "1 2→3 3←2"; r.got() != want {
			t.Errorf("got %s, want %s", r.got(), want)
		}
	})
	t.Run("no response wanted", func(t *testing.T) {
		r := newHoldRun(100)
		e := &decode.Event{Kind: decode.EventRequest, Side: kafka.ToBroker, At: kafka.FrameRef{Frame: 1}}
		e.Msg.NoResponse = true
		r.event(1, e)
		if r.got() != "1" {
			t.Errorf("an acks=0 Produce is held: %q", r.got())
		}
	})
	t.Run("bounded", func(t *testing.T) {
		// One request never answered holds at most max rows; the oldest
		// goes out without its response, which is counted when it comes.
		r := newHoldRun(3)
		r.req(1, 1, 10)
		for i := int64(0); i < 10; i++ {
			r.req(2, 2+2*i, int32(i))
			r.resp(2, 3+2*i, int32(i))
			if n := len(r.h.queue) - r.h.head; n > 3 {
				t.Fatalf("%d rows held, over 3", n)
			}
		}
		r.resp(1, 30, 10)
		if !strings.HasPrefix(r.got(), "1 2→3 3←2 ") || !strings.HasSuffix(r.got(), " 30←1") {
			t.Errorf("got %s", r.got())
		}
		if r.h.unlinked != 1 {
			t.Errorf("%d unlinked, want 1", r.h.unlinked)
		}
		if len(r.out) != 22 {
			t.Errorf("%d rows written, want 22", len(r.out))
		}
	})
	t.Run("finish", func(t *testing.T) {
		r := newHoldRun(100)
		r.req(1, 1, 10)
		r.req(1, 2, 11)
		if err := r.h.finish(); err != nil || r.got() != "1 2" {
			t.Errorf("finish: %v, wrote %q", err, r.got())
		}
	})
	t.Run("long run keeps the queue small", func(t *testing.T) {
		r := newHoldRun(1 << 20)
		r.req(1, 1, 1)
		for i := int64(0); i < 5000; i++ {
			r.req(2, 2+2*i, int32(i))
			r.resp(2, 3+2*i, int32(i))
		}
		r.resp(1, 20000, 1)
		if len(r.out) != 10002 || cap(r.h.queue) > 16384 {
			t.Errorf("%d written, queue capacity %d", len(r.out), cap(r.h.queue))
		}
	})
}

func TestFrameHoldFor(t *testing.T) {
	if n := frameHoldFor(0); n != frameHoldFor(defaultBudgetFor) || n < 10000 {
		t.Errorf("default hold %d", n)
	}
	if a, b := frameHoldFor(64<<20), frameHoldFor(1<<30); a >= b {
		t.Errorf("the hold does not grow with the limit: %d, %d", a, b)
	}
}

func TestParseFieldOptions(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string // header,sep,quote,agg
		err  string
	}{
		{in: []string{"header=y"}, want: "y,0,0,"},
		{in: []string{"header=n,separator=/s,quote=s"}, want: "n,32,39,"},
		{in: []string{"separator=,,quote=d", "aggregator=|"}, want: "-,44,34,|"},
		{in: []string{"separator=/t"}, want: "-,9,0,"},
		{in: []string{"separator=;,header=y"}, want: "y,59,0,"},
		{in: []string{"quote=n"}, want: "-,0,0,"},
		{in: []string{"header=yes"}, err: "want y or n"},
		{in: []string{"separator=ab"}, err: "one character"},
		{in: []string{"separator="}, err: "want /t, /s or one printable"},
		{in: []string{"quote=x"}, err: "want d, s or n"},
		{in: []string{"occurrence=a"}, err: `unknown option "occurrence"`},
		{in: []string{"header"}, err: "want KEY=VALUE"},
	} {
		var opt report.FramesOptions
		err := parseFieldOptions(c.in, &opt)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		h := "-"
		if opt.Header != nil {
			h = map[bool]string{true: "y", false: "n"}[*opt.Header]
		}
		got := fmt.Sprintf("%s,%d,%d,%s", h, opt.Separator, opt.Quote, opt.Aggregator)
		if err != nil || got != c.want {
			t.Errorf("%q: %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestParseAPIsAndConnections(t *testing.T) {
	keys, err := parseAPIs([]string{"Produce,71", "gettelemetrysubscriptions", "0", "999"})
	if err != nil || fmt.Sprint(keys) != "[0 71 999]" {
		t.Errorf("keys %v, %v", keys, err)
	}
	for _, bad := range []string{"Nope", "-1", "", "70000"} {
		if _, err := parseAPIs([]string{bad}); err == nil {
			t.Errorf("--api %q accepted", bad)
		}
	}
	ids, err := parseConnections([]string{"3,1", "3"})
	if err != nil || fmt.Sprint(ids) != "[3 1]" {
		t.Errorf("ids %v, %v", ids, err)
	}
	for _, bad := range []string{"0", "x", "-2"} {
		if _, err := parseConnections([]string{bad}); err == nil {
			t.Errorf("--connection %q accepted", bad)
		}
	}
}
