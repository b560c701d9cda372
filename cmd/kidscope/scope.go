package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/report"
)

// scopeFlags are the drill-down flags: which instance, client, broker or
// connections a report shows, and the time range read (docs/analyze.md:
// "Drill-down and scope").
type scopeFlags struct {
	instances []string
	clients   []string
	brokers   []string
	from, to  string
}

// register adds --instance, --client and --broker (frames and analyze
// share --connection through their own flag: frames has had it first)
// and, with times, --from and --to.
func (f *scopeFlags) register(cmd *cobra.Command, times bool) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.instances, "instance", nil, "only this client instance ID, in Kafka's base64 or RFC 4122's form, repeatable")
	fl.StringSliceVar(&f.clients, "client", nil, "only connections from this client address (10.0.0.5, 10.0.0.5:51234, [::1]:51234), repeatable")
	fl.StringSliceVar(&f.brokers, "broker", nil, "only connections to this broker address (10.0.0.9, 10.0.0.9:9092), repeatable")
	if times {
		fl.StringVar(&f.from, "from", "", "read only packets captured at or after this time: RFC 3339, Unix seconds, or an offset from the first packet (+30s), as editcap -A")
		fl.StringVar(&f.to, "to", "", "read only packets captured before this time: RFC 3339, Unix seconds, or an offset from the first packet (+2m), as editcap -B")
	}
}

// scope parses the flags; conns is --connection's parsed value.
func (f *scopeFlags) scope(conns []int) (report.Scope, error) {
	s := report.Scope{Connections: conns}
	for _, v := range splitList(f.instances) {
		u, err := kafka.ParseUUID(v)
		if err != nil {
			return s, fmt.Errorf("--instance %q: want a client instance ID in Kafka's base64 form (22 characters, AAAAAAAAAAAAAAAAAAAAAQ) or RFC 4122's (00000000-0000-0000-0000-000000000001)", v)
		}
		s.Instances = append(s.Instances, u)
	}
	addrs := func(flag string, vals []string) ([]report.Addr, error) {
		var out []report.Addr
		for _, v := range splitList(vals) {
			a, err := report.ParseAddr(v)
			if err != nil {
				return nil, fmt.Errorf("%s %w", flag, err)
			}
			out = append(out, a)
		}
		return out, nil
	}
	var err error
	if s.Clients, err = addrs("--client", f.clients); err != nil {
		return s, err
	}
	if s.Brokers, err = addrs("--broker", f.brokers); err != nil {
		return s, err
	}
	return s, nil
}

func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// timeRange parses --from and --to.
func (f *scopeFlags) timeRange() (pipeline.TimeRange, error) {
	var r pipeline.TimeRange
	var err error
	if f.from != "" {
		if r.From, r.FromOff, r.FromRel, err = parseTimeBound(f.from); err != nil {
			return r, fmt.Errorf("--from %w", err)
		}
		r.HasFrom = true
	}
	if f.to != "" {
		if r.To, r.ToOff, r.ToRel, err = parseTimeBound(f.to); err != nil {
			return r, fmt.Errorf("--to %w", err)
		}
		r.HasTo = true
	}
	if r.HasFrom && r.HasTo && r.FromRel == r.ToRel {
		empty := !r.From.Before(r.To)
		if r.FromRel {
			empty = r.FromOff >= r.ToOff
		}
		if empty {
			return r, fmt.Errorf("--from %s --to %s: the range is empty (--to must be later)", f.from, f.to)
		}
	}
	return r, nil
}

// parseTimeBound reads one bound: "+30s" (an offset from the first
// packet, Go's duration syntax), an RFC 3339 time (2026-05-01T10:00:00Z,
// fractions allowed) or Unix seconds (1714557600.5), as editcap takes.
func parseTimeBound(s string) (at time.Time, off time.Duration, rel bool, err error) {
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return at, 0, false, fmt.Errorf("%q: an offset is + and a duration such as 30s, 1m30s or 250ms", s)
		}
		return at, d, true, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, 0, false, nil
	}
	if sec, frac, ok := strings.Cut(s, "."); len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
		n, err1 := strconv.ParseInt(sec, 10, 64)
		var ns int64
		var err2 error
		if ok {
			if len(frac) == 0 || len(frac) > 9 {
				err2 = fmt.Errorf("bad fraction")
			} else {
				ns, err2 = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
			}
		}
		if err1 == nil && err2 == nil {
			return time.Unix(n, ns).UTC(), 0, false, nil
		}
	}
	return at, 0, false, fmt.Errorf("%q: want an RFC 3339 time (2026-05-01T10:00:00Z), Unix seconds (1714557600.5) or an offset from the first packet (+30s)", s)
}

// framesScope is what --instance, --client and --broker keep of frames'
// messages: those of the connections between the addresses given and,
// with --instance, those of a connection from its first request that
// carried one of the IDs on (a message has no instance ID of its own but
// in a request's header: the answers and later requests of that client
// are what one wants to read).
type framesScope struct {
	scope report.Scope
	with  map[int]bool // connections that sent one of the instance IDs
}

func (f *framesScope) any() bool {
	return len(f.scope.Instances)+len(f.scope.Clients)+len(f.scope.Brokers) > 0
}

// keeps reports whether a message of c passes.
func (f *framesScope) keeps(c *kafka.Conn, e *decode.Event) bool {
	s := &f.scope
	if len(s.Clients) > 0 && !slices.ContainsFunc(s.Clients, func(a report.Addr) bool { return a.Matches(c.Client) }) {
		return false
	}
	if len(s.Brokers) > 0 && !slices.ContainsFunc(s.Brokers, func(a report.Addr) bool { return a.Matches(c.Broker) }) {
		return false
	}
	if len(s.Instances) == 0 {
		return true
	}
	if r := &e.Msg.Request; e.Side == kafka.ToBroker && r.HasInstanceID && slices.Contains(s.Instances, r.InstanceID) {
		if f.with == nil {
			f.with = map[int]bool{}
		}
		f.with[c.ID] = true
	}
	return f.with[c.ID]
}

// parseAll parses the scope flags with --connection's values, and sets
// the time range in opt.
func (f *scopeFlags) parseAll(conns []string, opt *pipeline.Options) (report.Scope, error) {
	ids, err := parseConnections(conns)
	if err != nil {
		return report.Scope{}, err
	}
	s, err := f.scope(ids)
	if err != nil {
		return s, err
	}
	opt.Time, err = f.timeRange()
	return s, err
}

// applyScope narrows the run's rules result to the scope, after the rules
// ran on every connection: the cross-connection findings (the instance
// inventory's, the brokers' verdicts) are those of the whole capture, and
// the scope picks which to show. The exit code then follows the findings
// shown: a CI job scoped to one client fails on that client's findings.
func applyScope(s *report.Scope, run *pipeline.Result, form report.UUIDForm) *report.ScopeNote {
	if !s.Any() {
		return nil
	}
	res, note := s.Apply(&run.Rules, form)
	run.Rules = res
	return &note
}
