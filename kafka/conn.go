package kafka

import "net/netip"

// Direction is one way of a connection.
type Direction uint8

const (
	ToBroker Direction = iota // client → broker: requests
	ToClient                  // broker → client: responses
)

func (d Direction) String() string {
	if d == ToBroker {
		return "to-broker"
	}
	return "to-client"
}

// Carries names what the direction carries: "request" or "response".
func (d Direction) Carries() string {
	if d == ToBroker {
		return "request"
	}
	return "response"
}

// Endpoints are a connection's two ends; which one is the broker is decided
// by reassembly (the broker port, or the SYN's receiver).
type Endpoints struct {
	Client netip.AddrPort
	Broker netip.AddrPort
}

// Conn identifies a connection of a run.
type Conn struct {
	ID int // 1-based, in the order connections first carried data
	Endpoints
	// MidStream[d] is true when direction d began before the capture (no
	// SYN was captured for it): its first byte may sit inside a message.
	MidStream [2]bool
	// First is where the connection's first packet was captured.
	First FrameRef
	// TCPStream is Wireshark's tcp.stream index of the connection (every
	// TCP conversation of the inputs, from 0), when HasTCPStream: a
	// connection past the pipeline's cap on 4-tuples has none.
	TCPStream    int
	HasTCPStream bool
}

// Close is how a connection ended in the capture.
type Close struct {
	Seen  bool      // a FIN or RST was captured
	Reset bool      // by RST
	By    Direction // the direction of the first FIN or RST (ToClient: the broker closed)
	At    FrameRef
}
