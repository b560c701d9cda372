package decode

import "github.com/kidscope/kidscope/kafka"

// EventKind says what an Event reports.
type EventKind uint8

const (
	EventRequest   EventKind = iota + 1 // a whole request
	EventResponse                       // a whole response
	EventResync                         // framing was regained after lost or mid-stream bytes
	EventNotKafka                       // the stream is not Kafka (Reason names it, e.g. TLS)
	EventMalformed                      // a frame or body that does not parse (Err)
	EventSASLToken                      // a SASL token after SaslHandshake v0: counted, never kept
	EventTruncated                      // the stream ended inside a frame
)

// Event is one thing the decoder found on a connection.
type Event struct {
	Kind EventKind
	Side kafka.Direction
	At   kafka.FrameRef // where it became complete (for a resync: the first frame of the regained message)
	Msg  Message
	// Skipped is the number of bytes passed over before a resync.
	Skipped int64
	// Reason says why a stream is not Kafka ("TLS", "no Kafka frame …").
	Reason string
	Err    error
}

// Message is one Kafka request or response.
type Message struct {
	Size int32 // the frame size field: bytes after the 4-byte length
	// Request is the request header: for a response, the header of the
	// request it answers (when Matched).
	Request RequestHeader
	// RequestAt is where the answered request became complete (responses).
	RequestAt kafka.FrameRef
	// Response is the response header (responses only).
	Response ResponseHeader
	// Matched is true for a response whose correlation ID matched a
	// pending request of the connection.
	Matched bool
	// Answer holds a response's error codes: the top-level ErrorCode
	// wherever the version has one, and the nested codes when the body was
	// decoded in full (see Options.AllAnswers).
	Answer
	// NoResponse marks a request that gets no response by design: a
	// Produce with acks = 0.
	NoResponse bool
	// Body holds the fields the rules read, for the APIs they read.
	Body    Body
	HasBody bool
	// BodyErr is why a body that should have been decoded was not (nil
	// when it was, or when the API's body is not read).
	BodyErr error
}
