//go:build libpcap

package capture

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcap"
)

// errLibpcapTimeout is libpcap's read timeout: no packet yet.
var errLibpcapTimeout = pcap.NextErrorTimeoutExpired

// libpcapSource captures through libpcap, for systems where AF_PACKET is not
// the way (or to compare with it).
type libpcapSource struct{ h *pcap.Handle }

// openLibpcap opens the interface and sets opt.Filter, compiled for the
// link type the handle delivers.
func openLibpcap(opt LiveOptions) (frameSource, layers.LinkType, error) {
	h, err := pcap.OpenLive(opt.Interface, int32(opt.Snaplen), false, opt.Poll)
	if err != nil {
		return nil, 0, err
	}
	link := h.LinkType()
	if opt.Filter != nil {
		prog, err := opt.Filter(link)
		if err != nil {
			h.Close()
			return nil, 0, err
		}
		ins := make([]pcap.BPFInstruction, len(prog))
		for i, r := range prog {
			ins[i] = pcap.BPFInstruction{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
		}
		if err := h.SetBPFInstructionFilter(ins); err != nil {
			h.Close()
			return nil, 0, err
		}
	}
	return &libpcapSource{h: h}, link, nil
}

func (s *libpcapSource) ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	return s.h.ZeroCopyReadPacketData()
}

func (s *libpcapSource) Drops() int64 {
	st, err := s.h.Stats()
	if err != nil {
		return 0
	}
	return int64(st.PacketsDropped)
}

func (s *libpcapSource) Close() { s.h.Close() }
