package pipeline

import (
	"cmp"
	"slices"

	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/result"
)

// portTally counts the TCP packets on no broker port, by the port that
// looks like their server's, and notes which of those ports carry what
// looks like Kafka requests: what a run that decoded no Kafka tells the
// user it saw instead (a wrong --port). It sees every packet, in capture
// order, on the goroutine that reads, so its counts do not depend on the
// workers; its memory is fixed (about 330 KiB, taken at the first packet
// on no broker port).
type portTally struct {
	ports    reassembly.Ports
	table    *decode.APITable
	maxFrame int32
	t        *portTables
}

type portTables struct {
	packets [65536]uint32 // saturating
	probes  [65536]uint8  // payloads probed for Kafka, per destination port
	server  [1024]uint64  // ports seen as a server's: SYN receivers, SYN/ACK senders, Kafka request receivers
	kafka   [1024]uint64  // ports a Kafka-looking request was sent to
}

// maxProbes bounds the payloads probed per port: requests start most
// segments a client sends, so a few tell, and a busy port that is not
// Kafka costs no more than a few.
const maxProbes = 16

// TCP flags in the fixed header's flags byte.
const (
	tcpSYN = 0x02
	tcpACK = 0x10
)

// synAck is the SYN and ACK bits of a decoded TCP header, as add takes
// them.
func synAck(t *layers.TCP) byte {
	var f byte
	if t.SYN {
		f |= tcpSYN
	}
	if t.ACK {
		f |= tcpACK
	}
	return f
}

func newPortTally(opt *Options) *portTally {
	table := opt.Decode.Table
	if table == nil {
		table = decode.DefaultAPITable()
	}
	return &portTally{ports: opt.Reassembly.Ports, table: table, maxFrame: opt.Decode.MaxFrameSize}
}

func bit(set *[1024]uint64, p uint16) bool { return set[p/64]&(1<<(p%64)) != 0 }
func mark(set *[1024]uint64, p uint16)     { set[p/64] |= 1 << (p % 64) }

// see notes a packet between these ports with these TCP flags and n
// bytes of payload. counted says it is on no broker port: the caller then
// calls count, after probe when probe is set (the payload may show which
// port is the server's).
func (t *portTally) see(src, dst uint16, flags byte, n int) (counted, probe bool) {
	if t.ports.Auto || t.ports.Has(src) || t.ports.Has(dst) {
		return false, false
	}
	if t.t == nil {
		t.t = new(portTables)
	}
	tb := t.t
	switch {
	case flags&(tcpSYN|tcpACK) == tcpSYN:
		mark(&tb.server, dst)
	case flags&(tcpSYN|tcpACK) == tcpSYN|tcpACK:
		mark(&tb.server, src)
	}
	// A server's answers are not probed: a response can start like a
	// request, and would name the client's port.
	return true, n > 0 && !bit(&tb.server, src) && !bit(&tb.kafka, dst) && tb.probes[dst] < maxProbes
}

// count counts a packet that see counted, for its server's port; with no
// handshake or request seen, for the lower port, where servers mostly
// listen.
func (t *portTally) count(src, dst uint16) {
	tb := t.t
	port := min(src, dst)
	switch {
	case bit(&tb.server, dst):
		port = dst
	case bit(&tb.server, src):
		port = src
	}
	if tb.packets[port] != ^uint32(0) {
		tb.packets[port]++
	}
}

// probe looks at the start of a payload sent to dst.
func (t *portTally) probe(dst uint16, payload []byte) {
	tb := t.t
	tb.probes[dst]++
	if decode.LooksLikeRequest(payload, t.table, t.maxFrame) {
		mark(&tb.kafka, dst)
		mark(&tb.server, dst)
	}
}

// maxOtherPorts is how many ports the summary names.
const maxOtherPorts = 3

// fill puts the busiest ports, and the ports that look like Kafka, into
// the summary.
func (t *portTally) fill(sum *result.Summary) {
	if t.t == nil {
		return
	}
	var all, kafka []result.PortCount
	for p, n := range t.t.packets {
		if n == 0 && !bit(&t.t.kafka, uint16(p)) {
			continue
		}
		pc := result.PortCount{Port: uint16(p), Packets: int64(n), Kafka: bit(&t.t.kafka, uint16(p))}
		all = append(all, pc)
		if pc.Kafka {
			kafka = append(kafka, pc)
		}
	}
	busiest := func(a, b result.PortCount) int {
		return cmp.Or(cmp.Compare(b.Packets, a.Packets), cmp.Compare(a.Port, b.Port))
	}
	slices.SortFunc(all, busiest)
	slices.SortFunc(kafka, busiest)
	sum.OtherPorts = all[:min(len(all), maxOtherPorts)]
	sum.KafkaPorts = kafka[:min(len(kafka), maxOtherPorts)]
}
