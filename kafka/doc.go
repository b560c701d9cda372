// Package kafka holds the few plain types every stage of kidscope shares,
// so that no stage re-declares them and nothing copies them field by field
// from one stage's type to the next: where a frame is (FrameRef, and Span
// for a run of stream bytes), a connection's two directions (Direction),
// its endpoints and identity (Endpoints, Conn, Close), and Kafka's UUID
// with its two text forms. It has no behaviour beyond those values' own
// methods and depends on no other package of kidscope.
package kafka
