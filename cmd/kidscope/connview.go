package main

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/report"
)

// connViewSink keeps the messages of one connection for the
// per-connection view (`analyze --connection N`, report.Ladder), up to
// max: past it they are counted, and frames --connection N lists them.
type connViewSink struct {
	conn  int
	names []string
	form  report.UUIDForm
	max   int
	recs  []report.FrameRecord
	at    []kafka.FrameRef
	more  int64
}

// connViewFor is the view's cap under a memory limit (bytes; 0: the
// default budget's): a third of the share frames' hold takes
// (frameHoldFor, at its 1 KiB a row, room for a record's strings and
// pointers), since analyze keeps the rules' findings in that share too.
func connViewFor(limit int64) int {
	return max(frameHoldFor(limit)/3, 16)
}

func (s *connViewSink) Event(c *pipeline.Conn, e *decode.Event) {
	if c.ID != s.conn || e.Kind != decode.EventRequest && e.Kind != decode.EventResponse {
		return
	}
	if len(s.recs) >= s.max {
		s.more++
		return
	}
	s.recs = append(s.recs, report.NewFrameRecord(s.names, &c.Conn, e, s.form))
	s.at = append(s.at, e.At)
}

func (s *connViewSink) Closed(*pipeline.Conn) {}

// ladder is the view of what was kept, with the findings of res on the
// connection.
func (s *connViewSink) view(res *pipeline.Result) *report.ConnView {
	s.pair()
	l := &report.ConnView{Files: s.names, Conn: s.conn, Messages: s.recs, At: s.at, NotKept: s.more, Start: res.Summary.First}
	for i := range res.Rules.Findings {
		if f := &res.Rules.Findings[i]; f.ConnID == s.conn {
			l.Findings = append(l.Findings, *f)
		}
	}
	return l
}

// pair fills in each kept request's response frame (PAIR), as frames'
// hold does: the view has the whole connection, so no hold is needed.
func (s *connViewSink) pair() {
	type key struct {
		file  string
		frame int64
		corr  int32
	}
	reqs := map[key]int{}
	for i := range s.recs {
		r := &s.recs[i]
		if r.Direction == "request" {
			reqs[key{r.File, r.Frame, r.CorrelationID}] = i
			continue
		}
		if r.RequestFrame == nil {
			continue
		}
		file := r.File
		if r.RequestFile != "" {
			file = r.RequestFile
		}
		if j, ok := reqs[key{file, *r.RequestFrame, r.CorrelationID}]; ok {
			f := r.Frame
			s.recs[j].ResponseFrame = &f
			if r.File != s.recs[j].File {
				s.recs[j].ResponseFile = r.File
			}
		}
	}
}
