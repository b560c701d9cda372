package wsplugin

// FieldType is a Wireshark field type the plugin declares.
type FieldType string

const (
	Int8     FieldType = "int8"
	Int16    FieldType = "int16"
	Int32    FieldType = "int32"
	Uint8    FieldType = "uint8"
	Uint32   FieldType = "uint32"
	Bool     FieldType = "bool"
	String   FieldType = "string"
	GUID     FieldType = "guid"
	FrameNum FieldType = "framenum"
)

// Field is one field of the kidscope tree, filterable in Wireshark as
// "kidscope." + Abbrev.
type Field struct {
	Abbrev string
	Name   string
	Type   FieldType
	Blurb  string
	// Values names the value table its numbers are shown with: "errors"
	// (Kafka's error codes) or "compression".
	Values string
	// Frames is the `kidscope frames -e` field this one must equal on
	// every message (the tests hold it to that), and RFC4122 says it
	// equals it as frames --uuid rfc4122 writes it. "" for a field frames
	// does not have.
	Frames  string
	RFC4122 bool
}

// Fields is every field of the kidscope tree, in the order the tree shows
// them. A UUID is shown twice: in Kafka's form (URL-safe base64, NAME_id)
// and as a GUID (NAME_uuid), which Wireshark filters in RFC 4122's form.
var Fields = []Field{
	{Abbrev: "api_key", Name: "API key", Type: Int16, Frames: "api_key",
		Blurb: "The request's API key; on a response, that of the request it answers (kidscope matches them by correlation ID)"},
	{Abbrev: "api_name", Name: "API", Type: String, Frames: "api_name", Blurb: "The API's name in kidscope's table"},
	{Abbrev: "api_version", Name: "API version", Type: Int16, Frames: "api_version"},
	{Abbrev: "correlation_id", Name: "Correlation ID", Type: Int32, Frames: "correlation_id"},
	{Abbrev: "header_version", Name: "Header version", Type: Uint8,
		Blurb: "Request header v0-v3 or response header v0-v1, as kidscope's API table maps the API version"},
	{Abbrev: "client_id", Name: "Client ID", Type: String, Frames: "client_id"},
	{Abbrev: "tagged_fields", Name: "Header tagged fields", Type: Uint32, Blurb: "How many tagged fields the request header holds"},
	{Abbrev: "instance_id", Name: "Client instance ID", Type: String, Frames: "instance_id",
		Blurb: "Tag 0 of a v2 or v3 request header (KIP-1313), in Kafka's form"},
	{Abbrev: "instance_uuid", Name: "Client instance ID (RFC 4122)", Type: GUID, Frames: "instance_id", RFC4122: true,
		Blurb: "Tag 0 of a v2 or v3 request header (KIP-1313), as a GUID"},
	{Abbrev: "request_frame", Name: "Request frame", Type: FrameNum, Frames: "request_frame",
		Blurb: "The frame of the request this response answers"},

	{Abbrev: "telemetry.throttle_time_ms", Name: "Throttle time (ms)", Type: Int32},
	{Abbrev: "telemetry.error_code", Name: "Error code", Type: Int16, Values: "errors"},
	{Abbrev: "telemetry.client_instance_id", Name: "Body client instance ID", Type: String, Frames: "telemetry_instance_id",
		Blurb: "The ClientInstanceId of a v0 GetTelemetrySubscriptions or PushTelemetry body (KIP-714), in Kafka's form"},
	{Abbrev: "telemetry.client_instance_uuid", Name: "Body client instance ID (RFC 4122)", Type: GUID, Frames: "telemetry_instance_id", RFC4122: true,
		Blurb: "The ClientInstanceId of a v0 GetTelemetrySubscriptions or PushTelemetry body (KIP-714), as a GUID"},
	{Abbrev: "telemetry.subscription_id", Name: "Subscription ID", Type: Int32, Frames: "subscription_id"},
	{Abbrev: "telemetry.terminating", Name: "Terminating", Type: Bool, Frames: "terminating"},
	{Abbrev: "telemetry.compression_type", Name: "Compression", Type: Int8, Values: "compression", Frames: "compression_type"},
	{Abbrev: "telemetry.metrics_length", Name: "Metrics length", Type: Uint32, Frames: "metrics_length",
		Blurb: "The length of the metrics; the plugin never shows the metrics"},
	{Abbrev: "telemetry.accepted_compression_type", Name: "Accepted compression", Type: Int8, Values: "compression"},
	{Abbrev: "telemetry.push_interval_ms", Name: "Push interval (ms)", Type: Int32},
	{Abbrev: "telemetry.max_bytes", Name: "Telemetry max bytes", Type: Int32},
	{Abbrev: "telemetry.delta_temporality", Name: "Delta temporality", Type: Bool},
	{Abbrev: "telemetry.requested_metric", Name: "Requested metrics prefix", Type: String},

	{Abbrev: "group.throttle_time_ms", Name: "Throttle time (ms)", Type: Int32},
	{Abbrev: "group.error_code", Name: "Error code", Type: Int16, Values: "errors"},
	{Abbrev: "group.error_message", Name: "Error message", Type: String},
	{Abbrev: "group.id", Name: "Group ID", Type: String},
	{Abbrev: "group.generation_id", Name: "Generation ID", Type: Int32},
	{Abbrev: "group.leader", Name: "Leader member ID", Type: String},
	{Abbrev: "group.member_id", Name: "Member ID", Type: String, Frames: "member_id"},
	{Abbrev: "group.instance_id", Name: "Group instance ID", Type: String},
	{Abbrev: "group.member_epoch", Name: "Member epoch", Type: Int32},
	{Abbrev: "group.heartbeat_interval_ms", Name: "Heartbeat interval (ms)", Type: Int32},

	{Abbrev: "finding.rule", Name: "Rule", Type: String, Blurb: "The rule of a finding analyze --annotate wrote into a packet comment"},
	{Abbrev: "finding.severity", Name: "Severity", Type: String},
	{Abbrev: "finding.role", Name: "Related as", Type: String,
		Blurb: "On a frame related to a finding elsewhere: what it is to that finding"},
	{Abbrev: "finding.summary", Name: "Rule summary", Type: String},
}

// Expert is an expert information item the plugin can add: "kidscope." +
// Abbrev filters for it.
type Expert struct {
	Abbrev, Text string
	// Group is Wireshark's expert group (expert.group.NAME), Severity its
	// severity (expert.severity.NAME).
	Group, Severity string
}
