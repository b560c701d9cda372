// Package synth writes synthetic Kafka conversations into capture files with
// samples/netsim and records what a decoder must find in them: every request
// and response, with its header fields and the frame at which it becomes
// complete. The pipeline and end-to-end tests share it, so that both check
// the same captures against the same expectations. It is test support: no
// command imports it.
package synth

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"
	"os"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/samples/netsim"
)

// InstanceID is the client instance ID that requests carry in request
// header tag 0 when asked to.
var InstanceID = kafka.UUID{0x5e, 0x11, 0x7a, 0x3d, 0x9c, 0x42, 0x4f, 0x1b, 0x8a, 0x77, 0x20, 0x3e, 0x61, 0xaa, 0xbb, 0xcc}

// Msg is one Kafka message a decoder must find.
type Msg struct {
	Label  string // what the conversation calls it ("produce", "fetch-resp", …)
	Conn   int    // the Builder's connection, 1-based in the order opened
	Client netip.AddrPort
	Broker netip.AddrPort
	// Request is true for a request, false for a response.
	Request bool
	// Key and Version are the request's (for a response: of the request it
	// answers, when Matched).
	Key, Version int16
	Corr         int32
	ClientID     string
	// InstanceID is the header's tag 0 in Kafka's text form, "" when absent.
	InstanceID string
	// Matched is true for a response whose request was captured whole.
	Matched bool
	// HasError and ErrorCode: the top-level error code, for the responses
	// whose version has one (written from Kafka's message schemas, not from
	// the decoder's table).
	HasError  bool
	ErrorCode int16
	// Frame is the 1-based frame at which the message is complete.
	Frame int64
}

// String is the message's canonical line: tests compare these.
func (m Msg) String() string {
	if m.Request {
		return fmt.Sprintf("frame %5d %s>%s request key %d v%d corr %d client %q instance %q",
			m.Frame, m.Client, m.Broker, m.Key, m.Version, m.Corr, m.ClientID, m.InstanceID)
	}
	s := fmt.Sprintf("frame %5d %s<%s response corr %d", m.Frame, m.Client, m.Broker, m.Corr)
	if !m.Matched {
		return s + " unmatched"
	}
	s += fmt.Sprintf(" key %d v%d", m.Key, m.Version)
	if m.HasError {
		s += fmt.Sprintf(" error %d", m.ErrorCode)
	}
	return s
}

// Lines returns the canonical lines of msgs, in order.
func Lines(msgs []Msg) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.String()
	}
	return out
}

// Builder is a capture under construction and the messages sent so far.
type Builder struct {
	C    *netsim.Capture
	Msgs []Msg
	// TruncatedAt is the frame WriteTruncated cut the file in.
	TruncatedAt int
	opt         netsim.Options
	conns       int
}

// New starts an empty capture.
func New(opt netsim.Options) *Builder {
	return &Builder{C: netsim.New(opt), opt: opt}
}

// Conn is one Kafka connection of a Builder.
type Conn struct {
	b        *Builder
	N        *netsim.Conn
	Index    int
	ClientID string
	// Corr is the correlation ID of the next request.
	Corr int32
	mss  int
	sent map[int32]sentReq
}

type sentReq struct {
	key, ver int16
	whole    bool // captured whole: its response is matched
}

// Open opens a connection (with its handshake unless o.MidStream) whose
// requests carry clientID.
func (b *Builder) Open(cli, srv netip.AddrPort, o netsim.ConnOptions, clientID string) *Conn {
	b.conns++
	c := &Conn{b: b, N: b.C.Open(cli, srv, o), Index: b.conns, ClientID: clientID, sent: map[int32]sentReq{}}
	// The segment size as netsim picks it: Send's frame numbers for
	// several messages in one write depend on it.
	c.mss = o.MSS
	if c.mss == 0 {
		c.mss = 1460
		if !cli.Addr().Unmap().Is4() {
			c.mss -= 20
		}
		if !b.opt.NoTimestamps {
			c.mss -= 12
		}
	}
	return c
}

// Frame is one Kafka frame built and not yet sent.
type Frame struct {
	Bytes []byte
	// HeaderLen is the length of the frame's size field and header.
	HeaderLen int
	msg       Msg
}

// NewRequest builds the next request of the connection: the header version
// the API table gives the key and version, the connection's client ID and,
// when withID (and the header has tagged fields), InstanceID in tag 0.
func (c *Conn) NewRequest(label string, body kmsg.Request, ver int16, withID bool) Frame {
	key := body.Key()
	api, ok := decode.LookupAPI(key)
	if !ok {
		panic(fmt.Sprintf("synth: unknown API key %d", key))
	}
	body.SetVersion(ver)
	h := decode.RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: c.Corr,
		HeaderVersion: api.RequestHeaderVersion(ver), ClientID: c.ClientID}
	m := Msg{Label: label, Conn: c.Index, Client: c.N.Client(), Broker: c.N.Server(), Request: true,
		Key: key, Version: ver, Corr: c.Corr, ClientID: c.ClientID}
	if withID && h.HeaderVersion >= 2 {
		h.InstanceID, h.HasInstanceID = InstanceID, true
		m.InstanceID = InstanceID.String()
	}
	c.Corr++
	hdr := decode.AppendRequest(nil, h, nil)
	return Frame{Bytes: decode.AppendRequest(nil, h, body.AppendTo(nil)), HeaderLen: len(hdr), msg: m}
}

// NewResponse builds the response to the request with correlation ID corr,
// with the response header version of that request's key and version.
func (c *Conn) NewResponse(label string, corr int32, body kmsg.Response) Frame {
	req, ok := c.sent[corr]
	if !ok {
		panic(fmt.Sprintf("synth: no request with correlation ID %d was sent", corr))
	}
	api, _ := decode.LookupAPI(req.key)
	if body.Key() != req.key {
		panic(fmt.Sprintf("synth: response key %d to a request of key %d", body.Key(), req.key))
	}
	body.SetVersion(req.ver)
	hv := api.ResponseHeaderVersion(req.ver)
	m := Msg{Label: label, Conn: c.Index, Client: c.N.Client(), Broker: c.N.Server(), Corr: corr}
	if req.whole {
		m.Matched, m.Key, m.Version = true, req.key, req.ver
		m.ErrorCode, m.HasError = errorCode(body, req.ver)
	}
	return Frame{Bytes: decode.AppendResponse(nil, corr, hv, body.AppendTo(nil)), HeaderLen: 4 + 4 + hv, msg: m}
}

// errorCode is the top-level error code kidscope reads from the bodies of
// the APIs its rules read.
func errorCode(body kmsg.Response, v int16) (int16, bool) {
	switch b := body.(type) {
	case *kmsg.FetchResponse:
		return b.ErrorCode, v >= 7
	case *kmsg.HeartbeatResponse:
		return b.ErrorCode, true
	case *kmsg.FindCoordinatorResponse:
		return b.ErrorCode, v <= 3
	case *kmsg.MetadataResponse:
		return b.ErrorCode, v >= 13
	case *kmsg.ApiVersionsResponse:
		return b.ErrorCode, true
	case *kmsg.JoinGroupResponse:
		return b.ErrorCode, true
	case *kmsg.GetTelemetrySubscriptionsResponse:
		return b.ErrorCode, true
	case *kmsg.PushTelemetryResponse:
		return b.ErrorCode, true
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return b.ErrorCode, true
	case *kmsg.SASLHandshakeResponse:
		return b.ErrorCode, true
	}
	return 0, false
}

// Send writes frames as one write of one side (all requests or all
// responses) and records them with the frames where they complete. A
// message some byte of which is never captured is not recorded (a response
// to such a request is recorded as unmatched). With several frames, opts
// must be empty: the frame of each message is then told from the segment
// size.
func (c *Conn) Send(frames []Frame, opts ...netsim.SegOpt) {
	if len(frames) == 0 {
		return
	}
	fromClient := frames[0].msg.Request
	var data []byte
	ends := make([]int, len(frames))
	for i, f := range frames {
		if f.msg.Request != fromClient {
			panic("synth: requests and responses in one Send")
		}
		data = append(data, f.Bytes...)
		ends[i] = len(data)
	}
	if len(frames) > 1 && len(opts) > 0 {
		panic("synth: segment options on a Send of several frames")
	}
	first := int64(c.b.C.Frames() + 1)
	done := int64(c.N.Send(fromClient, data, opts...))
	if len(frames) > 1 && done == 0 {
		panic("synth: several frames in one Send and some lost")
	}
	firstEnd := min(c.mss, len(data))
	lastStart := (len(data) - 1) / c.mss * c.mss
	for i, f := range frames {
		m := f.msg
		switch {
		case len(frames) == 1 || ends[i] > lastStart:
			m.Frame = done
		case ends[i] <= firstEnd:
			m.Frame = first
		default:
			panic("synth: cannot tell the frame of a message in the middle segments of a write")
		}
		if m.Request {
			c.sent[m.Corr] = sentReq{key: m.Key, ver: m.Version, whole: m.Frame > 0}
		}
		if m.Frame > 0 {
			c.b.Msgs = append(c.b.Msgs, m)
		}
	}
}

// Request builds and sends one request; it returns its correlation ID.
func (c *Conn) Request(label string, body kmsg.Request, ver int16, withID bool, opts ...netsim.SegOpt) int32 {
	f := c.NewRequest(label, body, ver, withID)
	c.Send([]Frame{f}, opts...)
	return f.msg.Corr
}

// Respond builds and sends the response to the request corr.
func (c *Conn) Respond(label string, corr int32, body kmsg.Response, opts ...netsim.SegOpt) {
	c.Send([]Frame{c.NewResponse(label, corr, body)}, opts...)
}

// WriteFile writes the capture.
func (b *Builder) WriteFile(path string) error { return b.C.WriteFile(path) }

// WriteTruncated writes the capture cut short and drops from Msgs the
// messages that complete at the cut frame or later. A little-endian pcap or
// pcapng file is cut in the middle of frame's packet data; a gzip file is
// cut in the middle of its compressed stream (frame is ignored), and the
// cut frame is the first one whose record the readable part does not hold
// whole. TruncatedAt is set to the cut frame.
func (b *Builder) WriteTruncated(path string, frame int) error {
	if b.opt.Format == netsim.PcapBigEndian {
		return fmt.Errorf("synth: WriteTruncated needs a little-endian file")
	}
	var buf bytes.Buffer
	if _, err := b.C.WriteTo(&buf); err != nil {
		return err
	}
	data := buf.Bytes()
	if b.opt.Gzip {
		// Cut the compressed stream, then see what a reader gets of it.
		data = data[:len(data)*2/3]
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return err
		}
		plain, _ := io.ReadAll(zr)
		frame = 0
		for n, off := 1, 0; frame == 0; n++ {
			_, next, ok := record(plain, off, b.opt.Format == netsim.PcapNG)
			if !ok {
				frame = n
			}
			off = next
		}
	} else {
		off := 0
		for n := 1; ; n++ {
			start, next, ok := record(data, off, b.opt.Format == netsim.PcapNG)
			if !ok {
				return fmt.Errorf("synth: the capture has no frame %d", frame)
			}
			if n == frame {
				// Half-way through the packet data (pcapng's EPB header is
				// 28 bytes, pcap's record header 16).
				hdr := 16
				if b.opt.Format == netsim.PcapNG {
					hdr = 28
				}
				data = data[:start+hdr+(next-start-hdr)/2]
				break
			}
			off = next
		}
	}
	b.TruncatedAt = frame
	b.Msgs = slices.DeleteFunc(b.Msgs, func(m Msg) bool { return m.Frame >= int64(frame) })
	return os.WriteFile(path, data, 0o644)
}

// record walks a little-endian capture file: from offset off (0 at the
// start of the file) it finds the next packet record and returns where it
// starts and ends, and whether data holds all of it.
func record(data []byte, off int, ng bool) (start, end int, ok bool) {
	if !ng {
		if off == 0 {
			off = 24 // the file header
		}
		if off+16 > len(data) {
			return off, off, false
		}
		end := off + 16 + int(binary.LittleEndian.Uint32(data[off+8:]))
		return off, end, end <= len(data)
	}
	// pcapng: skip blocks up to the next Enhanced Packet Block.
	for {
		if off+12 > len(data) {
			return off, off, false
		}
		typ, size := binary.LittleEndian.Uint32(data[off:]), int(binary.LittleEndian.Uint32(data[off+4:]))
		if size < 12 || off+size > len(data) {
			return off, off, false
		}
		if typ == 6 {
			return off, off + size, true
		}
		off += size
	}
}

// Records returns n bytes of valid v2 record batches (one record each with
// a value of pseudo-random bytes, CRC-32C set), as a producer sends them.
func Records(n int, seed byte) []byte {
	var out []byte
	x := uint32(seed)*2654435761 + 1
	next := func() byte {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return byte(x)
	}
	for off := int64(0); len(out) < n; off++ {
		value := make([]byte, min(n-len(out), 1000))
		for i := range value {
			value[i] = next()
		}
		out = append(out, recordBatch(off, []byte("key"), value)...)
	}
	return out
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func recordBatch(offset int64, key, value []byte) []byte {
	r := kmsg.Record{Key: key, Value: value}
	r.Length = int32(len(r.AppendTo(nil)) - 1) // the length varint of 0 takes one byte
	recs := r.AppendTo(nil)
	rb := kmsg.RecordBatch{FirstOffset: offset, Magic: 2, FirstTimestamp: 1735732800000, MaxTimestamp: 1735732800000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: recs}
	b := rb.AppendTo(nil)
	rb.Length = int32(len(b) - 12)
	b = rb.AppendTo(nil)
	rb.CRC = int32(crc32.Checksum(b[21:], castagnoli))
	return rb.AppendTo(nil)
}
