package pipeline

import "time"

// TimeRange keeps the packets captured in [From, To), as editcap -A and
// -B cut a file: the packets outside it are dropped as they are read,
// before reassembly, so what follows sees the cut capture (frame numbers
// stay those of the inputs). Each bound is absolute, or an offset from
// the first packet read (the first TCP segment, in the inputs' merged
// time order) when its Rel is set; a zero bound is open.
type TimeRange struct {
	From, To       time.Time
	FromOff, ToOff time.Duration
	FromRel, ToRel bool
	HasFrom, HasTo bool

	base    time.Time // the first packet's time, for the offsets
	started bool
}

// Any reports whether the range cuts anything.
func (r *TimeRange) Any() bool { return r.HasFrom || r.HasTo }

// keep reports whether a packet captured at t is in the range; the first
// call fixes the offsets' base.
func (r *TimeRange) keep(t time.Time) bool {
	if !r.started {
		r.started, r.base = true, t
		if r.FromRel {
			r.From = t.Add(r.FromOff)
		}
		if r.ToRel {
			r.To = t.Add(r.ToOff)
		}
	}
	if r.HasFrom && t.Before(r.From) {
		return false
	}
	return !r.HasTo || t.Before(r.To)
}
