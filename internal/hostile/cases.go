package hostile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// BrokerPort is the port every generated broker listens on (kidscope's
// default).
const BrokerPort = 9092

// instanceID returns a distinct, valid (non-zero, not the all-ones
// sentinel) instance ID for n.
func instanceID(n int) kafka.UUID {
	var id kafka.UUID
	binary.BigEndian.PutUint64(id[0:], 0x5e117a3d9c424f1b)
	binary.BigEndian.PutUint64(id[8:], uint64(n)+1)
	id[6] = id[6]&0x0f | 0x40 // RFC 4122 version 4
	id[8] = id[8]&0x3f | 0x80 // and variant
	return id
}

// request builds one request frame of version ver, in the header version
// the API table gives it, with the instance ID in tag 0 when id is set.
func request(body kmsg.Request, ver int16, corr int32, clientID string, id *kafka.UUID) []byte {
	body.SetVersion(ver)
	api, _ := decode.LookupAPI(body.Key())
	h := decode.RequestHeader{APIKey: body.Key(), APIVersion: ver, CorrelationID: corr,
		HeaderVersion: api.RequestHeaderVersion(ver), ClientID: clientID}
	if id != nil {
		h.InstanceID, h.HasInstanceID = *id, true
	}
	return decode.AppendRequest(nil, h, body.AppendTo(nil))
}

// response builds one response frame with response header version hv.
func response(body kmsg.Response, ver int16, corr int32, hv int) []byte {
	body.SetVersion(ver)
	return decode.AppendResponse(nil, corr, hv, body.AppendTo(nil))
}

// pcapng block types and helpers.
const (
	ngSHB = 0x0A0D0D0A
	ngIDB = 1
	ngNRB = 4
	ngEPB = 6
)

func ngBlock(typ uint32, body []byte) []byte {
	n := 12 + (len(body)+3)&^3
	b := make([]byte, n)
	binary.LittleEndian.PutUint32(b[0:], typ)
	binary.LittleEndian.PutUint32(b[4:], uint32(n))
	copy(b[8:], body)
	binary.LittleEndian.PutUint32(b[n-4:], uint32(n))
	return b
}

func ngSection() []byte {
	body := make([]byte, 16)
	binary.LittleEndian.PutUint32(body[0:], 0x1A2B3C4D)
	binary.LittleEndian.PutUint16(body[4:], 1)
	binary.LittleEndian.PutUint64(body[8:], ^uint64(0)) // section length unknown
	return ngBlock(ngSHB, body)
}

func ngInterface(snap uint32) []byte {
	body := make([]byte, 8)
	binary.LittleEndian.PutUint16(body[0:], 1) // Ethernet
	binary.LittleEndian.PutUint32(body[4:], snap)
	return ngBlock(ngIDB, body)
}

// HugeEPB writes a gzip'd pcapng whose one packet block declares a
// captured length of 0xFFFFFFF0 (its block length as large), followed by
// data zero bytes.
func HugeEPB(path string, data int64) error {
	f, err := create(path, true)
	if err != nil {
		return err
	}
	f.write(ngSection())
	f.write(ngInterface(0))
	var h [28]byte
	binary.LittleEndian.PutUint32(h[0:], ngEPB)
	binary.LittleEndian.PutUint32(h[4:], 0xFFFFFFFC)
	binary.LittleEndian.PutUint32(h[20:], 0xFFFFFFF0)
	binary.LittleEndian.PutUint32(h[24:], 0xFFFFFFF0)
	f.write(h[:])
	f.zeros(data)
	return f.close()
}

// HugeRecord writes a gzip'd classic pcap (read by the streamed path)
// with a snap length of 0xFFFFFFF0 and one record declaring that captured
// length, followed by data zero bytes.
func HugeRecord(path string, data int64) error {
	p, err := newPcap(path, true, 0xFFFFFFF0)
	if err != nil {
		return err
	}
	var h [16]byte
	binary.LittleEndian.PutUint32(h[8:], 0xFFFFFFF0)
	binary.LittleEndian.PutUint32(h[12:], 0xFFFFFFF0)
	p.write(h[:])
	p.zeros(data)
	return p.close()
}

// InterfaceFlood writes a gzip'd pcapng of one section holding n
// interface description blocks and nothing else.
func InterfaceFlood(path string, n int) error {
	f, err := create(path, true)
	if err != nil {
		return err
	}
	f.write(ngSection())
	idb := ngInterface(262144)
	for i := 0; i < n && f.err == nil; i++ {
		f.write(idb)
	}
	return f.close()
}

// NameFlood writes a gzip'd pcapng of one interface and n name-resolution
// blocks, each naming one IPv4 address.
func NameFlood(path string, n int) error {
	f, err := create(path, true)
	if err != nil {
		return err
	}
	f.write(ngSection())
	f.write(ngInterface(262144))
	for i := 0; i < n && f.err == nil; i++ {
		name := fmt.Sprintf("host-%d.example", i)
		rec := make([]byte, 4, 64)
		binary.LittleEndian.PutUint16(rec[0:], 1) // nrb_record_ipv4
		binary.LittleEndian.PutUint16(rec[2:], uint16(4+len(name)+1))
		rec = append(rec, 10, byte(i>>16), byte(i>>8), byte(i))
		rec = append(rec, name...)
		rec = append(rec, 0)
		for len(rec)%4 != 0 {
			rec = append(rec, 0)
		}
		rec = append(rec, 0, 0, 0, 0) // nrb_record_end
		f.write(ngBlock(ngNRB, rec))
	}
	return f.close()
}

// PartialJoinGroups writes a gzip'd pcap of conns connections, each
// sending a JoinGroup request whose frame declares declared bytes and
// sending only sent of them; no connection closes.
func PartialJoinGroups(path string, conns, declared, sent int) error {
	p, err := newPcap(path, true, 262144)
	if err != nil {
		return err
	}
	head := request(&kmsg.JoinGroupRequest{Group: "g", SessionTimeoutMillis: 30000,
		RebalanceTimeoutMillis: 60000, ProtocolType: "consumer"}, 9, 1, "joiner", nil)
	binary.BigEndian.PutUint32(head, uint32(declared-4))
	body := make([]byte, sent)
	copy(body, head)
	for i := range conns {
		c := p.open(addr(i+1, uint16(40000+i%20000)), addr(0, BrokerPort), uint32(i)*100000)
		c.send(true, body)
	}
	return p.close()
}

// OutOfOrder writes a pcap of one connection whose client sends segs
// segments of 100 bytes after the handshake: with random, each at a
// random sequence number; without, in order (the same count of bytes, a
// stream of Heartbeat requests).
func OutOfOrder(path string, segs int, random bool, seed uint64) error {
	p, err := newPcap(path, false, 262144)
	if err != nil {
		return err
	}
	c := p.open(addr(1, 40000), addr(0, BrokerPort), 1)
	var stream []byte
	for corr := int32(0); len(stream) < segs*100; corr++ {
		stream = append(stream, request(&kmsg.HeartbeatRequest{Group: "g", Generation: 1, MemberID: "m"}, 4, corr, "ooo", nil)...)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range segs {
		seq := c.cseq + uint32(i*100)
		if random {
			seq = r.Uint32()
		}
		p.segment(c.client, c.broker, seq, c.sseq, psh|ack, stream[i*100:(i+1)*100])
	}
	return p.close()
}

// Violations writes a pcap of one connection of n Heartbeat v4 requests,
// each carrying a different header instance ID (every request after the
// first breaks header-id-changed), each answered without error.
func Violations(path string, n int) error {
	p, err := newPcap(path, false, 262144)
	if err != nil {
		return err
	}
	c := p.open(addr(1, 40000), addr(0, BrokerPort), 1)
	for i := range n {
		id := instanceID(i)
		c.send(true, request(&kmsg.HeartbeatRequest{Group: "g", Generation: 1, MemberID: "m"}, 4, int32(i), "violator", &id))
		c.send(false, response(&kmsg.HeartbeatResponse{}, 4, int32(i), 1))
	}
	c.close()
	return p.close()
}

// PartialFrames writes a pcap of conns connections, each opened and
// sending the first 10 bytes of a 100-byte request frame, none closed.
func PartialFrames(path string, conns int) error {
	p, err := newPcap(path, false, 262144)
	if err != nil {
		return err
	}
	head := request(&kmsg.HeartbeatRequest{Group: "g", Generation: 1, MemberID: "m"}, 4, 0, "partial", nil)
	binary.BigEndian.PutUint32(head, 96)
	for i := range conns {
		c := p.open(addr(i+1, uint16(1024+i%60000)), addr(0, BrokerPort), uint32(i)*1000)
		c.send(true, head[:10])
	}
	return p.close()
}

// Instances writes a pcap of n connections, each with one ApiVersions v3
// request carrying its own instance ID and its answer, then closed.
func Instances(path string, n int) error {
	p, err := newPcap(path, false, 262144)
	if err != nil {
		return err
	}
	for i := range n {
		c := p.open(addr(i+1, uint16(1024+i%60000)), addr(0, BrokerPort), uint32(i)*1000)
		id := instanceID(i)
		c.send(true, request(&kmsg.ApiVersionsRequest{ClientSoftwareName: "hostile", ClientSoftwareVersion: "1"}, 3, 0, "inst", &id))
		c.send(false, response(&kmsg.ApiVersionsResponse{}, 3, 0, 0))
		c.close()
	}
	return p.close()
}

// ReusedAfterNotKafka writes a pcap where one 4-tuple first carries a
// connection that is not Kafka (HTTP) and is never closed, then a new
// connection (a fresh SYN) on the same 4-tuple carries n Kafka requests,
// each answered.
func ReusedAfterNotKafka(path string, n int) error {
	p, err := newPcap(path, false, 262144)
	if err != nil {
		return err
	}
	cli, srv := addr(1, 40000), addr(0, BrokerPort)
	old := p.open(cli, srv, 5000)
	// Enough bytes for the decoder to judge the connection not Kafka.
	body := bytes.Repeat([]byte("field=value&"), 6000)
	old.send(true, fmt.Appendf(nil, "POST /upload HTTP/1.1\r\nHost: broker\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	old.send(false, []byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
	c := p.open(cli, srv, 3_000_000_000)
	for i := range n {
		c.send(true, request(&kmsg.HeartbeatRequest{Group: "g", Generation: 1, MemberID: "m"}, 4, int32(i), "reuser", nil))
		c.send(false, response(&kmsg.HeartbeatResponse{}, 4, int32(i), 1))
	}
	c.close()
	return p.close()
}

// TruncatedWithError writes a pcap of one connection that breaks
// header-id-changed (an error), then cuts the file inside its last
// record.
func TruncatedWithError(path string) error {
	if err := Violations(path, 3); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, st.Size()-20)
}
