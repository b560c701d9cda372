package decode

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// API keys the decoder treats apart: the bodies the rules read, Produce
// (its acks) and Metadata (its answers are memoised, see Scratch).
const (
	keyProduce                   int16 = 0
	keyMetadata                  int16 = 3
	KeyJoinGroup                 int16 = 11
	KeyLeaveGroup                int16 = 13
	KeySaslHandshake             int16 = 17
	KeyApiVersions               int16 = 18
	KeySaslAuthenticate          int16 = 36
	KeyConsumerGroupHeartbeat    int16 = 68
	KeyShareGroupHeartbeat       int16 = 76
	KeyStreamsGroupHeartbeat     int16 = 88
	KeyGetTelemetrySubscriptions int16 = 71
	KeyPushTelemetry             int16 = 72
)

// Error codes the decoder itself needs.
const (
	ErrNone               int16 = 0
	ErrUnsupportedVersion int16 = 35
)

// Body holds the fields the rules read from one request or response body.
// Only the fields of the message's API are set; HasBody says whether the
// body was decoded at all. Record bytes, SASL tokens and telemetry metric
// payloads are never kept.
type Body struct {
	// Request bodies of GetTelemetrySubscriptions and PushTelemetry v0, and
	// the GetTelemetrySubscriptions v0 response: the ClientInstanceId field.
	InstanceID    kafka.UUID
	HasInstanceID bool
	// PushTelemetry request; SubscriptionID also in the
	// GetTelemetrySubscriptions response. The metrics are not kept: only
	// their length and how they are compressed.
	SubscriptionID  int32
	Terminating     bool
	CompressionType int8
	MetricsLength   int
	// JoinGroup, the group heartbeats (ConsumerGroupHeartbeat; the
	// requests of ShareGroupHeartbeat and StreamsGroupHeartbeat) and
	// (GroupID only) LeaveGroup requests.
	GroupID         string
	MemberID        string
	GroupInstanceID *string
	MemberEpoch     int32
	GenerationID    int32
	// ApiVersions response: the broker's range per key.
	APIVersions []VersionRange
	// SaslHandshake request: the mechanism.
	Mechanism string
}

// VersionRange is one entry of an ApiVersions response.
type VersionRange struct {
	Key        int16
	MinVersion int16
	MaxVersion int16
}

// wantsBody reports whether the decoder buffers and decodes the whole frame
// of this API, request and response: the keys above, nothing else (record
// bytes are skipped).
func wantsBody(key int16) bool {
	switch key {
	case KeyJoinGroup, KeySaslHandshake, KeyApiVersions, KeyConsumerGroupHeartbeat,
		KeyGetTelemetrySubscriptions, KeyPushTelemetry:
		return true
	}
	return false
}

// wantsRequestBody reports whether the decoder decodes the request body of
// this API: those of wantsBody, and requests whose answers the rules read
// no more of than any answer's error codes (LeaveGroup, the share and
// streams group heartbeats).
func wantsRequestBody(key int16) bool {
	switch key {
	case KeyLeaveGroup, KeyShareGroupHeartbeat, KeyStreamsGroupHeartbeat:
		return true
	}
	return wantsBody(key)
}

// decodeRequestBody decodes the body of a request the rules read.
func decodeRequestBody(key, version int16, b []byte) (Body, error) {
	var body Body
	switch key {
	case KeyGetTelemetrySubscriptions:
		if version >= 1 { // v1 has no body fields but tags (seed 001)
			return body, checkTagsOnly(b)
		}
		var r kmsg.GetTelemetrySubscriptionsRequest
		r.SetVersion(version)
		if err := r.ReadFrom(b); err != nil {
			return body, err
		}
		body.InstanceID, body.HasInstanceID = r.ClientInstanceID, true
	case KeyPushTelemetry:
		if version >= 1 { // v1: the v0 body without ClientInstanceId
			return decodePushTelemetryV1(b)
		}
		var r kmsg.PushTelemetryRequest
		r.SetVersion(version)
		if err := r.ReadFrom(b); err != nil {
			return body, err
		}
		body.InstanceID, body.HasInstanceID = r.ClientInstanceID, true
		body.SubscriptionID, body.Terminating = r.SubscriptionID, r.Terminating
		body.CompressionType, body.MetricsLength = r.CompressionType, len(r.Metrics)
	case KeyJoinGroup:
		var r kmsg.JoinGroupRequest
		r.SetVersion(version)
		if err := r.ReadFrom(b); err != nil {
			return body, err
		}
		body.GroupID, body.MemberID, body.GroupInstanceID = r.Group, r.MemberID, r.InstanceID
	case KeyConsumerGroupHeartbeat:
		var r kmsg.ConsumerGroupHeartbeatRequest
		r.SetVersion(version)
		if err := r.ReadFrom(b); err != nil {
			return body, err
		}
		body.GroupID, body.MemberID, body.GroupInstanceID = r.Group, r.MemberID, r.InstanceID
		body.MemberEpoch = r.MemberEpoch
	case KeyShareGroupHeartbeat:
		var r kmsg.ShareGroupHeartbeatRequest
		r.SetVersion(version)
		if err := r.ReadFrom(b); err != nil {
			return body, err
		}
		body.GroupID, body.MemberID, body.MemberEpoch = r.GroupID, r.MemberID, r.MemberEpoch
	case KeyStreamsGroupHeartbeat:
		var r kmsg.StreamsGroupHeartbeatRequest
		r.SetVersion(version)
		if err := r.ReadFrom(b); err != nil {
			return body, err
		}
		body.GroupID, body.MemberID, body.GroupInstanceID = r.Group, r.MemberID, r.InstanceID
		body.MemberEpoch = r.MemberEpoch
	case KeyLeaveGroup:
		var r kmsg.LeaveGroupRequest
		r.SetVersion(version)
		if err := r.ReadFrom(b); err != nil {
			return body, err
		}
		body.GroupID = r.Group
	case KeySaslHandshake:
		var r kmsg.SASLHandshakeRequest
		r.SetVersion(version)
		if err := r.ReadFrom(b); err != nil {
			return body, err
		}
		body.Mechanism = r.Mechanism
	}
	return body, nil
}

// decodeResponseBody decodes the body of a response the rules read and
// returns its top-level error code (hasCode false where it has none).
func decodeResponseBody(key, version int16, b []byte) (body Body, code int16, hasCode bool, err error) {
	switch key {
	case KeyApiVersions:
		var r kmsg.ApiVersionsResponse
		r.SetVersion(version)
		if err = r.ReadFrom(b); err != nil && version > 0 {
			// A broker that does not support the version asked for answers
			// with a v0 body carrying UNSUPPORTED_VERSION.
			r = kmsg.ApiVersionsResponse{}
			r.SetVersion(0)
			if r.ReadFrom(b) == nil && r.ErrorCode == ErrUnsupportedVersion {
				err = nil
			}
		}
		if err != nil {
			return body, 0, false, err
		}
		for _, k := range r.ApiKeys {
			body.APIVersions = append(body.APIVersions, VersionRange{k.ApiKey, k.MinVersion, k.MaxVersion})
		}
		return body, r.ErrorCode, true, nil
	case KeyGetTelemetrySubscriptions:
		if version >= 1 {
			return gtsV1Response(key, version, b)
		}
		var r kmsg.GetTelemetrySubscriptionsResponse
		r.SetVersion(version)
		if err = r.ReadFrom(b); err != nil {
			return body, 0, false, err
		}
		body.InstanceID, body.HasInstanceID = r.ClientInstanceID, true
		body.SubscriptionID = r.SubscriptionID
		return body, r.ErrorCode, true, nil
	case KeyPushTelemetry:
		return codeOnly(key, version, b)
	case KeyJoinGroup:
		var r kmsg.JoinGroupResponse
		r.SetVersion(version)
		if err = r.ReadFrom(b); err != nil {
			return body, 0, false, err
		}
		body.MemberID, body.GenerationID = r.MemberID, r.Generation
		return body, r.ErrorCode, true, nil
	case KeyConsumerGroupHeartbeat:
		var r kmsg.ConsumerGroupHeartbeatResponse
		r.SetVersion(version)
		if err = r.ReadFrom(b); err != nil {
			return body, 0, false, err
		}
		if r.MemberID != nil {
			body.MemberID = *r.MemberID
		}
		body.MemberEpoch = r.MemberEpoch
		return body, r.ErrorCode, true, nil
	case KeySaslHandshake:
		var r kmsg.SASLHandshakeResponse
		r.SetVersion(version)
		if err = r.ReadFrom(b); err != nil {
			return body, 0, false, err
		}
		return body, r.ErrorCode, true, nil
	}
	return body, 0, false, nil
}

// codeOnly reads a response whose only field the rules need is its
// top-level code (GetTelemetrySubscriptions v1, PushTelemetry).
func codeOnly(key, version int16, b []byte) (Body, int16, bool, error) {
	code, ok := peekTop(key, version, b)
	if !ok {
		return Body{}, 0, false, errors.New("response body shorter than throttle time and error code")
	}
	return Body{}, code, true, nil
}

// gtsV1Response reads the head of a GetTelemetrySubscriptions v1
// response: the v0 body without ClientInstanceId, so SubscriptionId
// follows ThrottleTimeMs and ErrorCode.
func gtsV1Response(key, version int16, b []byte) (Body, int16, bool, error) {
	body, code, ok, err := codeOnly(key, version, b)
	if err != nil {
		return body, code, ok, err
	}
	if len(b) < 10 {
		return body, 0, false, errors.New("GetTelemetrySubscriptions v1 response shorter than its SubscriptionId")
	}
	body.SubscriptionID = int32(binary.BigEndian.Uint32(b[6:]))
	return body, code, true, nil
}

// decodePushTelemetryV1 reads a PushTelemetry v1 request: SubscriptionId
// int32, Terminating bool, CompressionType int8, Metrics compact bytes,
// tags. The metrics are passed over, never kept.
func decodePushTelemetryV1(b []byte) (Body, error) {
	var body Body
	if len(b) < 6 {
		return body, errors.New("PushTelemetry v1 body too short")
	}
	body.SubscriptionID = int32(binary.BigEndian.Uint32(b))
	body.Terminating = b[4] != 0
	body.CompressionType = int8(b[5])
	n := 6
	l, k := uvarint(b[n:])
	if k <= 0 {
		return body, errors.New("PushTelemetry v1 metrics length")
	}
	n += k
	if l > 0 {
		if uint64(len(b)-n) < l-1 {
			return body, fmt.Errorf("PushTelemetry v1 metrics of %d bytes run past the frame", l-1)
		}
		n += int(l - 1)
		body.MetricsLength = int(l - 1)
	}
	return body, checkTagsOnly(b[n:])
}

// checkTagsOnly requires b to be exactly one tagged-field section.
func checkTagsOnly(b []byte) error {
	var c int
	n, err := skipTaggedFields(b, &c)
	if err != nil {
		if errors.Is(err, errShort) {
			return errors.New("tagged fields run past the frame")
		}
		return err
	}
	if n != len(b) {
		return fmt.Errorf("%d bytes after the last field", len(b)-n)
	}
	return nil
}
