package wsplugin

import "github.com/kidscope/kidscope/decode"

// Kind is how a body field is laid out on the wire.
type Kind string

const (
	KInt8  Kind = "i8"
	KInt16 Kind = "i16"
	KInt32 Kind = "i32"
	KBool  Kind = "bool"
	KUUID  Kind = "uuid"
	// KString is a string: int16 length, or a compact (uvarint length+1)
	// one in flexible versions; null where the length says so.
	KString Kind = "str"
	// KBytes is a byte string (int32 length, or compact): the plugin
	// shows its length, never its bytes.
	KBytes Kind = "bytes"
	// KInt8s and KStrings are arrays (int32 count, or compact).
	KInt8s   Kind = "i8s"
	KStrings Kind = "strs"
)

// Slot is one field of a body layout.
type Slot struct {
	// Field is the Fields entry the value goes to (its Abbrev; for a UUID
	// the stem: STEM_id and STEM_uuid); "" reads it and shows nothing.
	Field string
	Kind  Kind
	// From and To are the versions that have the field; To -1: all from
	// From on.
	From, To int16
}

// Has reports whether version v of the body has the slot.
func (s Slot) Has(v int16) bool { return v >= s.From && (s.To < 0 || v <= s.To) }

// Body is the layout of the part of a request or response body the
// plugin reads.
type Body struct {
	Key      int16
	Response bool
	// MaxVersion is the newest version the layout describes: newer
	// bodies are not read.
	MaxVersion int16
	Slots      []Slot
	// Whole says the slots are the whole body: the plugin then requires
	// the tagged fields (flexible versions) and the body's end to follow.
	// Other layouts stop where what the plugin shows ends.
	Whole bool
}

// Bodies are the layouts the plugin reads: the bodies of the telemetry
// and group APIs the rules judge, as Kafka's schemas and KIP-1313 (v1:
// the v0 bodies without ClientInstanceId) define them.
var Bodies = []Body{
	{Key: decode.KeyGetTelemetrySubscriptions, MaxVersion: 1, Whole: true, Slots: []Slot{
		{"telemetry.client_instance", KUUID, 0, 0},
	}},
	{Key: decode.KeyGetTelemetrySubscriptions, Response: true, MaxVersion: 1, Whole: true, Slots: []Slot{
		{"telemetry.throttle_time_ms", KInt32, 0, -1},
		{"telemetry.error_code", KInt16, 0, -1},
		{"telemetry.client_instance", KUUID, 0, 0},
		{"telemetry.subscription_id", KInt32, 0, -1},
		{"telemetry.accepted_compression_type", KInt8s, 0, -1},
		{"telemetry.push_interval_ms", KInt32, 0, -1},
		{"telemetry.max_bytes", KInt32, 0, -1},
		{"telemetry.delta_temporality", KBool, 0, -1},
		{"telemetry.requested_metric", KStrings, 0, -1},
	}},
	{Key: decode.KeyPushTelemetry, MaxVersion: 1, Whole: true, Slots: []Slot{
		{"telemetry.client_instance", KUUID, 0, 0},
		{"telemetry.subscription_id", KInt32, 0, -1},
		{"telemetry.terminating", KBool, 0, -1},
		{"telemetry.compression_type", KInt8, 0, -1},
		{"telemetry.metrics_length", KBytes, 0, -1},
	}},
	{Key: decode.KeyPushTelemetry, Response: true, MaxVersion: 1, Whole: true, Slots: []Slot{
		{"telemetry.throttle_time_ms", KInt32, 0, -1},
		{"telemetry.error_code", KInt16, 0, -1},
	}},
	{Key: decode.KeyJoinGroup, MaxVersion: 9, Slots: []Slot{
		{"group.id", KString, 0, -1},
		{"", KInt32, 0, -1}, // SessionTimeoutMs
		{"", KInt32, 1, -1}, // RebalanceTimeoutMs
		{"group.member_id", KString, 0, -1},
		{"group.instance_id", KString, 5, -1},
	}},
	{Key: decode.KeyJoinGroup, Response: true, MaxVersion: 9, Slots: []Slot{
		{"group.throttle_time_ms", KInt32, 2, -1},
		{"group.error_code", KInt16, 0, -1},
		{"group.generation_id", KInt32, 0, -1},
		{"", KString, 7, -1}, // ProtocolType
		{"", KString, 0, -1}, // ProtocolName
		{"group.leader", KString, 0, -1},
		{"", KBool, 9, -1}, // SkipAssignment
		{"group.member_id", KString, 0, -1},
	}},
	{Key: decode.KeyConsumerGroupHeartbeat, MaxVersion: 1, Slots: []Slot{
		{"group.id", KString, 0, -1},
		{"group.member_id", KString, 0, -1},
		{"group.member_epoch", KInt32, 0, -1},
		{"group.instance_id", KString, 0, -1},
	}},
	{Key: decode.KeyConsumerGroupHeartbeat, Response: true, MaxVersion: 1, Slots: []Slot{
		{"group.throttle_time_ms", KInt32, 0, -1},
		{"group.error_code", KInt16, 0, -1},
		{"group.error_message", KString, 0, -1},
		{"group.member_id", KString, 0, -1},
		{"group.member_epoch", KInt32, 0, -1},
		{"group.heartbeat_interval_ms", KInt32, 0, -1},
	}},
}
