package report

import "github.com/kidscope/kidscope/kafka"

// LadderMessage is one request or response of a connection as the HTML
// report's ladder draws it: its header and error codes, never its
// payload, so what a ladder keeps stays small and holds no record data.
type LadderMessage struct {
	// Seq is the message's place among the connection's requests and
	// responses, from 0: a jump between two kept messages is a run the
	// collector did not keep, which the ladder folds.
	Seq      int64
	At       kafka.FrameRef
	Response bool
	// APIKey and APIVersion are the request's (for a response, those of
	// the request it answers, when Matched).
	APIKey, APIVersion int16
	CorrelationID      int32
	// InstanceID is the request header's client instance ID (KIP-1313).
	InstanceID    kafka.UUID
	HasInstanceID bool
	// Codes are a response's error codes: the top-level ErrorCode, else
	// the distinct nested ones; none when they were not read.
	Codes []int16
	// Matched: a response that answers a request of the connection;
	// RequestAt is that request's frame.
	Matched   bool
	RequestAt kafka.FrameRef
	// NoResponse marks a request no broker answers (acks = 0).
	NoResponse bool
}

// Ladder is what the HTML report knows of one connection's messages.
type Ladder struct {
	ConnID int
	// Total counts the connection's requests and responses, kept or not.
	Total int64
	// Messages are the kept ones in capture order.
	Messages []LadderMessage
}
