package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// fileStats is what a capture file holds, as far as the checks here care:
// how many frames, how many TCP frames to or from a broker port, how many
// connections, and the Kafka requests the clients sent, by API key.
type fileStats struct {
	Frames      int
	BrokerTCP   int
	Connections int
	Requests    map[int16]int
	Versions    map[int16]map[int16]int
}

// segment is one client-to-broker TCP payload.
type segment struct {
	seq  uint32
	data []byte
}

// clientStream is the client-to-broker direction of one connection.
type clientStream struct {
	isn    uint32
	hasISN bool
	segs   []segment
}

// readRequests reads a pcap file, reassembles each client-to-broker TCP
// stream by ordering its segments by sequence number, and reads the Kafka
// request headers from it: int32 size, int16 API key, int16 API version.
func readRequests(path string, brokerPorts map[uint16]bool) (*fileStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("%s: link type %v, want Ethernet", path, r.LinkType())
	}

	dec := newSegmentDecoder()
	st := &fileStats{Requests: map[int16]int{}, Versions: map[int16]map[int16]int{}}
	streams := map[connKey]*clientStream{}
	conns := map[connKey]bool{}
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: frame %d: %w", path, st.Frames+1, err)
		}
		st.Frames++
		tcp, src, dst, isTCP := dec.decode(data)
		if !isTCP {
			continue
		}
		sp, dp := uint16(tcp.SrcPort), uint16(tcp.DstPort)
		switch {
		case brokerPorts[dp]:
		case brokerPorts[sp]:
			st.BrokerTCP++
			conns[connKey{client: dst, broker: src}] = true
			continue
		default:
			continue
		}
		st.BrokerTCP++
		key := connKey{client: src, broker: dst}
		conns[key] = true
		s := streams[key]
		if s == nil {
			s = &clientStream{}
			streams[key] = s
		}
		if tcp.SYN {
			s.isn, s.hasISN = tcp.Seq, true
		}
		if len(tcp.Payload) > 0 {
			s.segs = append(s.segs, segment{seq: tcp.Seq, data: append([]byte(nil), tcp.Payload...)})
		}
	}
	st.Connections = len(conns)

	for key, s := range streams {
		stream, err := s.reassemble()
		if err != nil {
			return nil, fmt.Errorf("%s: %s->%s: %w", path, key.client, key.broker, err)
		}
		for len(stream) > 0 {
			if len(stream) < 8 {
				return nil, fmt.Errorf("%s: %s->%s: %d trailing bytes, not a request", path, key.client, key.broker, len(stream))
			}
			size := int32(binary.BigEndian.Uint32(stream))
			if size < 4 || int64(size) > int64(len(stream)-4) {
				return nil, fmt.Errorf("%s: %s->%s: request size %d with %d bytes left", path, key.client, key.broker, size, len(stream)-4)
			}
			apiKey := int16(binary.BigEndian.Uint16(stream[4:]))
			version := int16(binary.BigEndian.Uint16(stream[6:]))
			st.Requests[apiKey]++
			if st.Versions[apiKey] == nil {
				st.Versions[apiKey] = map[int16]int{}
			}
			st.Versions[apiKey][version]++
			stream = stream[4+size:]
		}
	}
	return st, nil
}

// reassemble orders the segments by sequence number relative to the initial
// sequence number (or the lowest seen, without a SYN), drops retransmitted
// bytes, and fails on a gap.
func (s *clientStream) reassemble() ([]byte, error) {
	if len(s.segs) == 0 {
		return nil, nil
	}
	base := s.isn + 1
	if !s.hasISN {
		base = s.segs[0].seq
		for _, g := range s.segs {
			if int32(g.seq-base) < 0 {
				base = g.seq
			}
		}
	}
	sort.SliceStable(s.segs, func(i, j int) bool { return s.segs[i].seq-base < s.segs[j].seq-base })
	var out []byte
	for _, g := range s.segs {
		off := g.seq - base
		have := uint32(len(out))
		switch {
		case off > have:
			return nil, fmt.Errorf("gap of %d bytes at stream offset %d", off-have, have)
		case off+uint32(len(g.data)) <= have:
			// retransmission of bytes we have
		default:
			out = append(out, g.data[have-off:]...)
		}
	}
	return out, nil
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys(m map[int16]int) []int16 {
	keys := make([]int16, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
