//go:build libpcap

package capture

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcap"
	"golang.org/x/net/bpf"
)

// errLibpcapTimeout is libpcap's read timeout: no packet yet.
var errLibpcapTimeout = pcap.NextErrorTimeoutExpired

// libpcapSource captures through libpcap, for systems where AF_PACKET is not
// the way (or to compare with it).
type libpcapSource struct{ h *pcap.Handle }

func openLibpcap(opt LiveOptions, prog []bpf.RawInstruction) (frameSource, error) {
	iface := opt.Interface
	h, err := pcap.OpenLive(iface, int32(opt.Snaplen), false, opt.Poll)
	if err != nil {
		return nil, err
	}
	if len(prog) > 0 {
		ins := make([]pcap.BPFInstruction, len(prog))
		for i, r := range prog {
			ins[i] = pcap.BPFInstruction{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
		}
		if err := h.SetBPFInstructionFilter(ins); err != nil {
			h.Close()
			return nil, err
		}
	}
	return &libpcapSource{h: h}, nil
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
