// Package decode owns the Kafka protocol on a reassembled byte stream: length
// framing with resynchronisation after a mid-stream start or lost bytes,
// request headers v0–v3 with their tagged fields (the KIP-1313 client
// instance ID is tag 0), response headers matched to their requests by
// correlation ID, the API table, and the bodies of the few APIs the rules
// read (ApiVersions, JoinGroup, ConsumerGroupHeartbeat,
// GetTelemetrySubscriptions, PushTelemetry).
//
// The package is pure: bytes in, values out. It knows nothing of sockets,
// files, clocks or rules, keeps no global mutable state and starts no
// goroutines, which is what makes it fast to test and safe to fuzz.
package decode
