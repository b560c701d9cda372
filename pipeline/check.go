package pipeline

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// Check configures the rules stage of a run.
type Check struct {
	Engine rules.Options
	// Filter chooses the findings a FindingSink hears and Result.Rules
	// keeps; the engine checks every rule regardless.
	Filter rules.Filter
}

// FindingSink is a Sink that wants each finding that passes the filter as
// it is made (a live capture streams them); f is valid only during the
// call.
type FindingSink interface {
	Finding(f *rules.Finding)
}

// An ObservationSink is a Sink that wants what the rules across
// connections read, as the engine observes it (rules.Observation), and
// every finding the engine makes, filtered or not, with its connection
// (live --publish: a fleet checks those rules over every host). o and f
// are valid only during the call.
type ObservationSink interface {
	Observed(o *rules.Observation)
	Found(f *rules.Finding, c kafka.Conn)
}

// Result is what a run made: its totals and, with Options.Rules, what the
// rules found.
type Result struct {
	result.Summary
	Rules rules.Result
}

// checker is the rules stage: the deliverer hands it every connection's
// calls in capture order, before the Sink hears them.
type checker struct {
	engine *rules.Engine
	filter rules.Filter
	out    FindingSink // nil: findings are only kept
	obs    ObservationSink
}

func newChecker(c *Check, sink Sink) *checker {
	if c == nil {
		return nil
	}
	k := &checker{filter: c.Filter}
	k.out, _ = sink.(FindingSink)
	k.obs, _ = sink.(ObservationSink)
	opt := c.Engine
	opt.Observe = k.obs != nil
	k.engine = rules.New(opt)
	return k
}

func (k *checker) open(c *Conn) { k.deliver(c, k.engine.Open(c.Conn)) }

func (k *checker) event(c *Conn, e *decode.Event) { k.deliver(c, k.engine.Event(c.ID, e)) }

func (k *checker) gap(c *Conn, side kafka.Direction, at kafka.FrameRef) { k.engine.Gap(c.ID, side, at) }

func (k *checker) closed(c *Conn) { k.deliver(c, k.engine.Close(c.ID, c.End.Close, c.End.Outcome)) }

func (k *checker) deliver(c *Conn, fs []rules.Finding) {
	if k.obs != nil {
		// Observations first: a finding of a request comes after it.
		obs := k.engine.TakeObservations()
		for i := range obs {
			k.obs.Observed(&obs[i])
		}
		for i := range fs {
			k.obs.Found(&fs[i], c.Conn)
		}
	}
	if k.out == nil {
		return
	}
	for i := range fs {
		if k.filter.Wants(&fs[i]) {
			k.out.Finding(&fs[i])
		}
	}
}

// result is the engine's result, filtered.
func (k *checker) result() rules.Result {
	res := k.engine.Result()
	k.filter.Apply(&res)
	return res
}
