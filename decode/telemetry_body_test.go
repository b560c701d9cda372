package decode

import (
	"encoding/binary"
	"testing"
)

// TestTelemetryV1Bodies: the KIP-1313 v1 bodies, which kmsg does not know,
// read as their v0 layouts without ClientInstanceId: PushTelemetry v1's
// compression and metrics length (never the metrics), and the
// SubscriptionId of a GetTelemetrySubscriptions v1 response.
func TestTelemetryV1Bodies(t *testing.T) {
	// SubscriptionId 9, Terminating, CompressionType 3 (lz4), Metrics of
	// 5 bytes (compact: length+1), no tags.
	push := []byte{0, 0, 0, 9, 1, 3, 6, 'm', 'e', 't', 'r', 'x', 0}
	b, err := decodeRequestBody(KeyPushTelemetry, 1, push)
	if err != nil || b.SubscriptionID != 9 || !b.Terminating || b.CompressionType != 3 || b.MetricsLength != 5 || b.HasInstanceID {
		t.Errorf("PushTelemetry v1: %+v, %v", b, err)
	}
	// Null metrics (compact length 0) are no bytes.
	if b, err := decodeRequestBody(KeyPushTelemetry, 1, []byte{0, 0, 0, 9, 0, 0, 0, 0}); err != nil || b.MetricsLength != 0 {
		t.Errorf("PushTelemetry v1 with null metrics: %+v, %v", b, err)
	}

	// ThrottleTimeMs 0, ErrorCode 42, SubscriptionId 77, then the rest
	// of the body (not read here).
	resp := make([]byte, 14)
	binary.BigEndian.PutUint16(resp[4:], 42)
	binary.BigEndian.PutUint32(resp[6:], 77)
	body, code, ok, err := decodeResponseBody(KeyGetTelemetrySubscriptions, 1, resp)
	if err != nil || !ok || code != 42 || body.SubscriptionID != 77 || body.HasInstanceID {
		t.Errorf("GetTelemetrySubscriptions v1 response: %+v code %d %v %v", body, code, ok, err)
	}
	if _, _, _, err := decodeResponseBody(KeyGetTelemetrySubscriptions, 1, resp[:8]); err == nil {
		t.Error("a v1 response cut inside SubscriptionId decodes")
	}
}
