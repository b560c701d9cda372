package samples

import (
	"net/netip"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/samples/netsim"
)

// A Scenario is one capture and the findings it must produce: a few TCP
// connections, each a script of Kafka requests and responses (with their
// header IDs and bodies) and of TCP behaviour, plus the expectations that
// docs/design/rules.md gives for it. Scenarios are plain data; Build turns one into
// capture bytes and an Expectation.
type Scenario struct {
	Name        string
	Description string // one line
	// Format is the capture file format (the zero value is pcap; most
	// scenarios set PcapNG). Link is the link type of its one interface.
	Format netsim.Format
	Link   netsim.Link
	// Ports are the broker ports kidscope must be told (-p); nil means the
	// default, 9092.
	Ports []uint16
	Seed  uint64
	// Large scenarios are only generated, never committed under samples/.
	Large bool
	// Brokers gives the KIP-1313 verdict (docs/design/rules.md §5) of every broker
	// endpoint of the scenario.
	Brokers []Broker
	Conns   []Conn
	// Schedule interleaves the connections: each entry runs the next action
	// (open, a step, end) of that connection. Actions left over when it
	// runs out run connection by connection. Nil runs each connection whole,
	// one after the other.
	Schedule []int
	// Covers names the rows of the seed's GetTelemetrySubscriptions table
	// (docs/design/rules.md §4) the scenario shows, as "row N/enforces" or
	// "row N/ignores" (for the README and the coverage test).
	Covers []string
	// Gen builds the connections and schedule of a generated scenario (the
	// large one) instead of Conns and Schedule.
	Gen func() ([]Conn, []int)
	// Net, when set, adjusts the capture's netsim options beyond Format,
	// Link and Seed: quirks of real capture files, such as a snap length
	// of 0.
	Net func(*netsim.Options)
}

// Verdict is a broker's KIP-1313 behaviour, as docs/design/rules.md §5 classifies it.
type Verdict string

const (
	Enforces Verdict = "enforces"
	Ignores  Verdict = "ignores"
	Mixed    Verdict = "mixed"
	Unknown  Verdict = "unknown"
)

// Broker is one broker endpoint and its verdict.
type Broker struct {
	Addr    netip.AddrPort
	KIP1313 Verdict
}

// Profile is the profile a connection must be judged by (docs/design/rules.md §2).
type Profile string

const (
	NoProfile Profile = "" // undetermined, or an old client with no v3-mapped request
	Seed      Profile = "seed"
	Accepted  Profile = "accepted"
)

// End is how a connection ends.
type End int

const (
	ClientCloses End = iota // FIN from the client (the default)
	BrokerCloses            // FIN from the broker
	BrokerResets            // RST from the broker
	StaysOpen               // the capture ends first
)

// Conn is one TCP connection and its script.
type Conn struct {
	Client, Broker netip.AddrPort
	// ClientID is the header ClientId of its requests (see
	// Request.NullClientID).
	ClientID string
	// MidStream leaves out the handshake: the capture starts inside the
	// connection.
	MidStream bool
	MSS       int // TCP segment size (zero: netsim's default)
	// FirstCorr is the correlation ID of the first request; each request
	// after it takes the next one.
	FirstCorr int32
	// Profile is the profile docs/design/rules.md §2 says the connection is judged by.
	Profile Profile
	Steps   []Step
	End     End
	// Finds are findings about the connection as a whole
	// (stream-mid-start): their frame is the first frame of the connection
	// in the capture.
	Finds []Find
}

// Step is one action of a connection's script: requests written in one
// socket write, then the broker's responses (each answers the oldest
// request not yet answered, as brokers answer in order), or raw bytes, or a
// broker that closes the connection.
type Step struct {
	// Pause is capture time that passes before the step.
	Pause time.Duration
	// Reqs are written in one write (one Send); most steps have one.
	Reqs []*Request
	// Resps are written one write each, after Reqs.
	Resps []*Response
	// Raw is bytes that are not a Kafka message (TLS records, SASL tokens).
	Raw *Raw
	// Blocks are pcapng blocks that hold no packet (custom, Decryption
	// Secrets, unknown), written before the step's messages; custom blocks
	// take a frame number, as in Wireshark.
	Blocks []netsim.Block
}

// HeaderID is the header's tag 0 (the KIP-1313 client instance ID):
// absent, or present with a value (ZERO included).
type HeaderID struct {
	ID  kafka.UUID
	Set bool
}

// Tag is a header that carries id as tag 0.
func Tag(id kafka.UUID) HeaderID { return HeaderID{ID: id, Set: true} }

// NoTag is a header without tag 0.
var NoTag HeaderID

// Body is a request or response body: a kmsg message (its Version set) or
// one of the v1 telemetry bodies kmsg does not know yet.
type Body interface {
	Key() int16
	GetVersion() int16
	AppendTo([]byte) []byte
}

var (
	_ Body = kmsg.Request(nil)
	_ Body = kmsg.Response(nil)
)

// Request is one Kafka request.
type Request struct {
	Body         Body
	ID           HeaderID
	NullClientID bool // a null ClientId instead of Conn.ClientID
	// Seg bends how the write is cut into segments (for a write of
	// several requests, the first request's Seg applies to the whole).
	Seg []netsim.SegOpt
	// Tail > 0 puts only the last Tail bytes of the request in the
	// capture: the connection began before the capture, inside this
	// request (with Conn.MidStream; only as the first request).
	Tail int
	// Label names the request for Find.Related.
	Label string
	// Finds are the findings at this request's frame.
	Finds []Find
}

// Response is one Kafka response; its correlation ID and header version
// come from the request it answers.
type Response struct {
	Body  Body
	Seg   []netsim.SegOpt
	Label string
	// Finds are the findings about this answer (at the response's frame).
	Finds []Find
}

// Raw is bytes on the connection that are not a Kafka request or response.
type Raw struct {
	FromClient bool
	Data       []byte
	Seg        []netsim.SegOpt
	// What the bytes are, for the test that knows tshark cannot read them.
	What  string
	Finds []Find
}

// Find is one expected finding.
type Find struct {
	Rule string
	// Related are labels (Request.Label, Response.Label) of the messages
	// whose frames the finding names in related_frames.
	Related []string
	// AtStart puts the finding at the first frame of the message rather
	// than the frame where it is complete (unused where both are one).
	AtStart bool
	// Info expects the finding as info rather than its rule's severity
	// (telemetry-push-unknown-id on a connection the capture joined
	// mid-stream).
	Info bool
}
