package realcapture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FileStats is what a capture file holds, as far as the harness cares: how
// many frames, how many TCP frames to or from a broker port, how many
// connections, and the Kafka requests the clients sent, by API key and
// version.
type FileStats struct {
	Frames      int
	BrokerTCP   int
	Connections int
	Requests    map[int16]int
	Versions    map[int16]map[int16]int
	// Flexible counts the requests in a flexible version (request
	// header v2, which can carry tagged fields), HeaderIDs those whose
	// header carries tag 0 (KIP-1313's client instance ID).
	Flexible, HeaderIDs int
	// TerminatingPushes counts the PushTelemetry requests with
	// Terminating set (read with kmsg).
	TerminatingPushes int
	// EmptyMemberHeartbeats counts the ConsumerGroupHeartbeat v1+
	// requests with an empty MemberId (KIP-1082 has v1 clients make
	// their own).
	EmptyMemberHeartbeats int
	// ReusedTuples counts connections whose 4-tuple a later connection of
	// the file took again (each counts in Connections).
	ReusedTuples int
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

// ReadRequests reads a pcap file, reassembles each client-to-broker TCP
// stream by ordering its segments by sequence number, and reads the Kafka
// request headers from it: int32 size, int16 API key, int16 API version.
// It is the harness's own count, independent of kidscope's decoder.
func ReadRequests(path string, ports []uint16) (*FileStats, error) {
	brokerPorts := make(map[uint16]bool, len(ports))
	for _, p := range ports {
		brokerPorts[p] = true
	}
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
	st := &FileStats{Requests: map[int16]int{}, Versions: map[int16]map[int16]int{}}
	streams := map[ConnKey]*clientStream{}
	// endedStream is a stream whose 4-tuple a later connection took.
	type endedStream struct {
		key ConnKey
		s   *clientStream
	}
	var ended []endedStream
	conns := map[ConnKey]bool{}
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
			conns[ConnKey{Client: dst, Broker: src}] = true
			continue
		default:
			continue
		}
		st.BrokerTCP++
		key := ConnKey{Client: src, Broker: dst}
		conns[key] = true
		s := streams[key]
		if tcp.SYN && s != nil && (s.hasISN && s.isn != tcp.Seq || len(s.segs) > 0) {
			// The kernel gave the 4-tuple to a new connection: the old
			// one's bytes are a stream of their own.
			ended = append(ended, endedStream{key, s})
			st.ReusedTuples++
			s = nil
		}
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
	st.Connections = len(conns) + st.ReusedTuples

	for key, s := range streams {
		ended = append(ended, endedStream{key, s})
	}
	for _, e := range ended {
		key, s := e.key, e.s
		stream, err := s.reassemble()
		if err != nil {
			return nil, fmt.Errorf("%s: %s->%s: %w", path, key.Client, key.Broker, err)
		}
		for len(stream) > 0 {
			if len(stream) < 8 {
				return nil, fmt.Errorf("%s: %s->%s: %d trailing bytes, not a request", path, key.Client, key.Broker, len(stream))
			}
			size := int32(binary.BigEndian.Uint32(stream))
			if size < 4 || int64(size) > int64(len(stream)-4) {
				return nil, fmt.Errorf("%s: %s->%s: request size %d with %d bytes left", path, key.Client, key.Broker, size, len(stream)-4)
			}
			apiKey := int16(binary.BigEndian.Uint16(stream[4:]))
			version := int16(binary.BigEndian.Uint16(stream[6:]))
			st.Requests[apiKey]++
			if st.Versions[apiKey] == nil {
				st.Versions[apiKey] = map[int16]int{}
			}
			st.Versions[apiKey][version]++
			h, err := readHeader(stream[4 : 4+size])
			if err != nil {
				return nil, fmt.Errorf("%s: %s->%s: request key %d v%d: %w", path, key.Client, key.Broker, apiKey, version, err)
			}
			if h.flexible {
				st.Flexible++
			}
			if h.tag0 {
				st.HeaderIDs++
			}
			if apiKey == 72 {
				body := kmsg.NewPtrPushTelemetryRequest()
				body.SetVersion(version)
				if err := body.ReadFrom(h.body); err != nil {
					return nil, fmt.Errorf("%s: %s->%s: PushTelemetry: %w", path, key.Client, key.Broker, err)
				}
				if body.Terminating {
					st.TerminatingPushes++
				}
			}
			if apiKey == 68 && version >= 1 {
				body := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				body.SetVersion(version)
				if err := body.ReadFrom(h.body); err != nil {
					return nil, fmt.Errorf("%s: %s->%s: ConsumerGroupHeartbeat: %w", path, key.Client, key.Broker, err)
				}
				if body.MemberID == "" {
					st.EmptyMemberHeartbeats++
				}
			}
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

// SortedKeys returns the keys of m in ascending order.
func SortedKeys(m map[int16]int) []int16 {
	keys := make([]int16, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// header is what readHeader finds in a request header.
type header struct {
	flexible bool   // header v2: the API version is flexible (kmsg says)
	tag0     bool   // its tagged fields include tag 0
	body     []byte // the bytes after the header
}

// readHeader reads a request header (after the size field): API key,
// version, correlation ID, client ID, and for a flexible version (as kmsg
// knows them) the tagged fields. An API key kmsg does not know is read as
// header v1.
func readHeader(req []byte) (header, error) {
	var h header
	if len(req) < 10 {
		return h, errors.New("short header")
	}
	key := int16(binary.BigEndian.Uint16(req))
	version := int16(binary.BigEndian.Uint16(req[2:]))
	if r := kmsg.RequestForKey(key); r != nil {
		r.SetVersion(version)
		h.flexible = r.IsFlexible()
	}
	b := req[8:]
	idLen := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if idLen > 0 {
		if int(idLen) > len(b) {
			return h, errors.New("client ID past the end")
		}
		b = b[idLen:]
	}
	if h.flexible {
		n, w := binary.Uvarint(b)
		if w <= 0 {
			return h, errors.New("bad tagged field count")
		}
		b = b[w:]
		for ; n > 0; n-- {
			tag, w := binary.Uvarint(b)
			if w <= 0 {
				return h, errors.New("bad tag")
			}
			b = b[w:]
			size, w := binary.Uvarint(b)
			if w <= 0 || size > uint64(len(b)-w) {
				return h, errors.New("bad tagged field size")
			}
			b = b[w+int(size):]
			if tag == 0 {
				h.tag0 = true
			}
		}
	}
	h.body = b
	return h, nil
}
