package synth

import (
	"net/netip"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/samples/netsim"
)

// Endpoints of the conversations.
var (
	Client4 = netip.MustParseAddrPort("10.1.0.7:50412")
	Broker4 = netip.MustParseAddrPort("10.1.0.2:9092")
	Client6 = netip.MustParseAddrPort("[fd00:1::7]:50412")
	Broker6 = netip.MustParseAddrPort("[fd00:1::2]:9092")
)

// ClientID is the client ID of the conversations' requests.
const ClientID = "synth-producer"

// Kind says how much of a variant's traffic a capture holds whole.
type Kind int

const (
	Clean     Kind = iota // every byte captured
	Lossy                 // some messages lose bytes (lost or cut segments)
	MidStream             // the capture starts inside a message
	Truncated             // the file ends in the middle of a packet record
)

// Variant is one capture of the corpus.
type Variant struct {
	Name string
	Kind Kind
	// Ext is the file name extension the variant's format calls for.
	Ext   string
	opt   netsim.Options
	build func(b *Builder) (truncateAt int)
}

// Write builds the variant's capture into path and returns the builder,
// whose Msgs are the messages a decoder must find.
func (v Variant) Write(path string) (*Builder, error) {
	b := New(v.opt)
	cut := v.build(b)
	if cut > 0 {
		return b, b.WriteTruncated(path, cut)
	}
	return b, b.WriteFile(path)
}

// standard is a variant of one connection carrying Standard.
func standard(cli, srv netip.AddrPort, seg Seg) func(b *Builder) int {
	return standardWith(cli, srv, netsim.ConnOptions{}, seg)
}

func standardWith(cli, srv netip.AddrPort, o netsim.ConnOptions, seg Seg) func(b *Builder) int {
	return func(b *Builder) int {
		c := b.Open(cli, srv, o, ClientID)
		c.Standard(seg)
		c.N.Close(true)
		return 0
	}
}

func ext(o netsim.Options) string {
	e := ".pcap"
	if o.Format == netsim.PcapNG {
		e = ".pcapng"
	}
	if o.Gzip {
		e += ".gz"
	}
	return e
}

// Variants returns the corpus: every link type, IPv6, VLAN, pcapng with two
// interfaces, gzip, nanosecond and big-endian pcap, a truncated file,
// snap-length-cut packets, trailing padding, a capture that starts inside a
// frame, lost, reordered, duplicated and overlapping segments, several
// frames per segment, one frame split at every byte offset of its header,
// interleaved connections, a 4-tuple reused after FIN and after RST, and an
// RST close.
func Variants() []Variant {
	var vs []Variant
	add := func(name string, kind Kind, opt netsim.Options, build func(b *Builder) int) {
		opt.Seed = uint64(len(vs) + 1)
		vs = append(vs, Variant{Name: name, Kind: kind, Ext: ext(opt), opt: opt, build: build})
	}
	for _, l := range []netsim.Link{netsim.Ethernet, netsim.EthernetVLAN, netsim.EthernetQinQ,
		netsim.LinuxSLL, netsim.LinuxSLL2, netsim.Null, netsim.RawIP} {
		add("link-"+l.String(), Clean, netsim.Options{Link: l}, standard(Client4, Broker4, nil))
	}
	add("ipv6", Clean, netsim.Options{}, standard(Client6, Broker6, nil))
	add("ipv6-vlan-hopbyhop", Clean, netsim.Options{Link: netsim.EthernetVLAN, IPv6HopByHop: true}, standard(Client6, Broker6, nil))
	add("ipv6-null", Clean, netsim.Options{Link: netsim.Null}, standard(Client6, Broker6, nil))
	add("ipv6-sll2", Clean, netsim.Options{Link: netsim.LinuxSLL2}, standard(Client6, Broker6, nil))
	add("pcap-nano", Clean, netsim.Options{Format: netsim.PcapNano}, standard(Client4, Broker4, nil))
	add("pcap-bigendian", Clean, netsim.Options{Format: netsim.PcapBigEndian, Link: netsim.LinuxSLL}, standard(Client4, Broker4, nil))
	add("pcap-gzip", Clean, netsim.Options{Gzip: true}, standard(Client4, Broker4, nil))
	add("pcapng-gzip", Clean, netsim.Options{Format: netsim.PcapNG, Gzip: true}, standard(Client4, Broker4, nil))
	add("pcapng-two-interfaces", Clean, netsim.Options{Format: netsim.PcapNG, MoreLinks: []netsim.Link{netsim.LinuxSLL2}},
		func(b *Builder) int {
			c1 := b.Open(Client4, Broker4, netsim.ConnOptions{}, ClientID)
			c2 := b.Open(Client6, Broker6, netsim.ConnOptions{Interface: 1}, "synth-admin")
			c2.Short("if1-")
			c1.Standard(nil)
			c2.Short("if1-again-")
			c1.N.Close(true)
			c2.N.Close(false)
			return 0
		})
	// Frames shorter than 60 bytes padded, as received from the wire:
	// without timestamps, data segments of a few bytes are that short.
	add("padding", Clean, netsim.Options{Pad: true, NoTimestamps: true}, standard(Client4, Broker4, Seg{
		"apiversions":   {netsim.SplitAt(4, 6)},
		"metadata-resp": {netsim.SplitAt(1, 5)},
		"push":          {netsim.SplitAt(2)},
	}))
	add("reorder", Clean, netsim.Options{}, standard(Client4, Broker4, Seg{
		"produce":       {netsim.Reorder(1, 3)},
		"metadata-resp": {netsim.SplitAt(10), netsim.Reorder(0, 1)},
		"fetch-resp":    {netsim.Reorder(0, 27), netsim.Reorder(5, 6)},
		"gts":           {netsim.SplitAt(20, 30), netsim.Reorder(0, 2)},
	}))
	add("duplicate-overlap", Clean, netsim.Options{}, standard(Client4, Broker4, Seg{
		"produce":    {netsim.Retransmit(0), netsim.Overlap(2, 500)},
		"fetch-resp": {netsim.Retransmit(27), netsim.Lose(3), netsim.Retransmit(3), netsim.Overlap(10, 1448)},
		"metadata":   {netsim.SplitAt(30), netsim.Retransmit(1), netsim.Retransmit(0)},
		"push-resp":  {netsim.SplitAt(6), netsim.Lose(0), netsim.Retransmit(0)},
	}))
	add("lost-segments", Lossy, netsim.Options{}, standard(Client4, Broker4, Seg{
		"produce":    {netsim.Lose(2)},
		"fetch-resp": {netsim.Lose(10)},
		"join":       {netsim.SplitAt(40), netsim.Lose(1)},
	}))
	// Sequence numbers wrap inside the Produce request and the Fetch
	// response, which also lose a segment each.
	add("seq-wrap-lost", Lossy, netsim.Options{}, standardWith(Client4, Broker4,
		netsim.ConnOptions{ClientISN: 0xffffffff - 1500, ServerISN: 0xffffffff - 6000}, Seg{
			"produce":    {netsim.Lose(3), netsim.Reorder(1, 2)},
			"fetch-resp": {netsim.Lose(2), netsim.Reorder(5, 9)},
		}))
	add("snap-cut", Lossy, netsim.Options{}, standard(Client4, Broker4, Seg{
		"produce":    {netsim.SnapCut(2, 100)},
		"fetch-resp": {netsim.SnapCut(20, 0)},
	}))
	truncated := func(b *Builder) int {
		c := b.Open(Client4, Broker4, netsim.ConnOptions{}, ClientID)
		c.Standard(nil)
		c.N.Close(true)
		// Cut inside a segment of the Fetch response.
		for _, m := range b.Msgs {
			if m.Label == "fetch" {
				return int(m.Frame) + 6
			}
		}
		panic("synth: no fetch")
	}
	add("truncated", Truncated, netsim.Options{}, truncated)
	add("truncated-pcapng", Truncated, netsim.Options{Format: netsim.PcapNG}, truncated)
	add("truncated-gzip", Truncated, netsim.Options{Gzip: true}, truncated)
	add("midstream", MidStream, netsim.Options{}, func(b *Builder) int {
		c := b.Open(Client4, Broker4, netsim.ConnOptions{MidStream: true}, ClientID)
		c.Corr = 40
		produce := kmsg.NewPtrProduceRequest()
		produce.Acks, produce.TimeoutMillis = -1, 30000
		produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders",
			Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: Records(20000, 3)}}}}
		f := c.NewRequest("cut-produce", produce, 9, true)
		// The capture starts 7000 bytes into the request: its first
		// captured bytes are record bytes.
		c.SendTail(f, 7000)
		pr := kmsg.NewPtrProduceResponse()
		pr.Topics = []kmsg.ProduceResponseTopic{{Topic: "orders", Partitions: []kmsg.ProduceResponseTopicPartition{{Partition: 0, BaseOffset: 7}}}}
		c.Respond("cut-produce-resp", f.msg.Corr, pr)
		c.Standard(nil)
		c.N.Close(false)
		return 0
	})
	add("split-every-offset", Clean, netsim.Options{}, func(b *Builder) int {
		c := b.Open(Client4, Broker4, netsim.ConnOptions{}, ClientID)
		md := kmsg.NewPtrMetadataRequest()
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: str("orders")}}
		probe := c.NewRequest("probe", md, 12, true)
		c.Corr--
		// Every offset inside the size field and the header, up to and
		// including the last byte of the tag-0 UUID, and into the body.
		for k := 1; k <= probe.HeaderLen+2; k++ {
			corr := c.Request("split-metadata", md, 12, true, netsim.SplitAt(k))
			resp := c.NewResponse("split-metadata-resp", corr, kmsg.NewPtrMetadataResponse())
			c.Send([]Frame{resp}, netsim.SplitAt(k%resp.HeaderLen+1))
		}
		// The same for a request split twice, around each UUID byte.
		for k := probe.HeaderLen - 16; k < probe.HeaderLen; k++ {
			c.Request("split2-metadata", md, 12, true, netsim.SplitAt(k, k+1))
		}
		c.N.Close(true)
		return 0
	})
	add("interleaved-connections", Clean, netsim.Options{Format: netsim.PcapNG}, func(b *Builder) int {
		var cs []*Conn
		for i := range 3 {
			cli := netip.AddrPortFrom(Client4.Addr(), uint16(50500+i))
			cs = append(cs, b.Open(cli, Broker4, netsim.ConnOptions{}, "synth-"+string(rune('a'+i))))
		}
		md := kmsg.NewPtrMetadataRequest()
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: str("orders")}}
		var corrs [3]int32
		for round := range 4 {
			for i, c := range cs {
				corrs[i] = c.Request("interleaved-metadata", md, 12, i != 1)
			}
			for i := range cs {
				c := cs[(i+round)%3]
				c.Respond("interleaved-metadata-resp", corrs[(i+round)%3], kmsg.NewPtrMetadataResponse())
			}
		}
		cs[0].Standard(Seg{"fetch-resp": {netsim.Reorder(2, 4)}})
		cs[2].Short("")
		cs[1].N.Close(true)
		cs[0].N.Close(false)
		cs[2].N.Reset(false)
		return 0
	})
	add("reuse-4-tuple", Clean, netsim.Options{}, func(b *Builder) int {
		c := b.Open(Client4, Broker4, netsim.ConnOptions{}, "synth-first")
		c.Short("first-")
		c.N.Close(true)
		c = b.Open(Client4, Broker4, netsim.ConnOptions{}, "synth-second")
		c.Short("second-")
		c.N.Close(false)
		c = b.Open(Client4, Broker4, netsim.ConnOptions{}, "synth-third")
		c.Short("third-")
		c.N.Reset(true)
		c = b.Open(Client4, Broker4, netsim.ConnOptions{}, "synth-fourth")
		c.Short("fourth-")
		c.N.Reset(false)
		return 0
	})
	add("rst-close", Clean, netsim.Options{}, func(b *Builder) int {
		c := b.Open(Client4, Broker4, netsim.ConnOptions{}, ClientID)
		c.Standard(nil)
		c.N.Reset(false)
		return 0
	})
	return vs
}

// SendTail sends f from byte from on, as the first bytes a capture holds of
// a message in flight: the message is not recorded, and the response to it
// would be unmatched.
func (c *Conn) SendTail(f Frame, from int) {
	c.N.Send(f.msg.Request, f.Bytes[from:])
	if f.msg.Request {
		c.sent[f.msg.Corr] = sentReq{key: f.msg.Key, ver: f.msg.Version}
	}
}
