package capture

import (
	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture/filter"
)

// filterHook runs the capture filter on each frame a Reader reads, before
// any layer is decoded. It remembers the program of the last link type
// seen, so a file of one link type costs one comparison and the program's
// run per frame, and nothing is allocated.
type filterHook struct {
	f    *filter.Filter
	link layers.LinkType
	prog *filter.Program // nil with f set: not looked up yet, or no program for link
	ok   bool            // prog is valid for link
}

// SetFilter makes the Reader skip the frames f rejects: they are counted in
// Stats.Filtered (and in Packets and Bytes, as every frame read) and never
// decoded. Frames of a link type f cannot be compiled for are rejected too;
// f.Errors says which. The filter runs on each frame's bytes as captured,
// from the link-layer header on, with the same program tcpdump would run
// (see package filter). Call it before the first Next; nil removes the
// filter.
func (r *Reader) SetFilter(f *filter.Filter) {
	r.filter = filterHook{f: f}
}

// accept reports whether the filter, if any, accepts a frame.
func (h *filterHook) accept(link layers.LinkType, data []byte) bool {
	if !h.ok || h.link != link {
		p, err := h.f.Program(link)
		if err != nil {
			p = nil
		}
		h.link, h.prog, h.ok = link, p, true
	}
	return h.prog != nil && h.prog.Match(data)
}
