package decode

import (
	"strings"
	"testing"
)

// TestAPITableAgainstSchemas checks a sample of keys against Apache Kafka's
// schemas (shared/kafka-protocol/messages) and PROTOCOL.md's later additions.
func TestAPITableAgainstSchemas(t *testing.T) {
	tests := []struct {
		key                    int16
		name                   string
		minVersion, maxVersion int16
		flexibleFrom           int16
		headerV3From           int16
	}{
		{0, "Produce", 0, 13, 9, -1},
		{1, "Fetch", 0, 18, 12, -1},
		{2, "ListOffsets", 0, 10, 6, -1},
		{3, "Metadata", 0, 13, 9, -1},
		{4, "LeaderAndIsr", 0, 7, 4, -1},
		{7, "ControlledShutdown", 0, 3, 3, -1},
		{8, "OffsetCommit", 0, 10, 8, -1},
		{9, "OffsetFetch", 0, 10, 6, -1},
		{11, "JoinGroup", 0, 9, 6, -1},
		{17, "SaslHandshake", 0, 1, -1, -1},
		{18, "ApiVersions", 0, 5, 3, -1},
		{36, "SaslAuthenticate", 0, 2, 2, -1},
		{47, "OffsetDelete", 0, 1, 1, 1},
		{57, "UpdateFeatures", 0, 2, 0, -1},
		{68, "ConsumerGroupHeartbeat", 0, 1, 0, -1},
		{71, "GetTelemetrySubscriptions", 0, 1, 0, 1},
		{72, "PushTelemetry", 0, 1, 0, 1},
		{74, "ListConfigResources", 0, 1, 0, -1},
		{76, "ShareGroupHeartbeat", 0, 1, 0, -1},
		{79, "ShareAcknowledge", 0, 1, 0, -1},
		{83, "InitializeShareGroupState", 0, 1, 0, 1},
		{87, "ReadShareGroupStateSummary", 0, 1, 0, 1},
		{88, "StreamsGroupHeartbeat", 0, 1, 0, -1},
		{89, "StreamsGroupDescribe", 0, 0, 0, -1},
		{90, "DescribeShareGroupOffsets", 0, 0, 0, -1},
		{91, "AlterShareGroupOffsets", 0, 0, 0, -1},
		{92, "DeleteShareGroupOffsets", 0, 0, 0, -1},
	}
	for _, tt := range tests {
		a, ok := LookupAPI(tt.key)
		if !ok {
			t.Errorf("LookupAPI(%d): not found", tt.key)
			continue
		}
		want := API{tt.key, tt.name, tt.minVersion, tt.maxVersion, tt.flexibleFrom, tt.headerV3From}
		if a != want {
			t.Errorf("LookupAPI(%d) = %+v, want %+v", tt.key, a, want)
		}
	}
}

func TestEveryKeyPresent(t *testing.T) {
	for key := int16(0); key <= 92; key++ {
		a, ok := LookupAPI(key)
		if !ok {
			t.Errorf("key %d missing", key)
			continue
		}
		if a.Key != key || a.Name == "" || strings.HasSuffix(a.Name, "Request") {
			t.Errorf("key %d: bad entry %+v", key, a)
		}
		if a.MinVersion < 0 || a.MaxVersion < a.MinVersion {
			t.Errorf("key %d: bad versions %+v", key, a)
		}
		if a.HeaderV3From >= 0 && (a.FlexibleFrom < 0 || a.FlexibleFrom > a.HeaderV3From) {
			t.Errorf("key %d: header v3 from v%d on a non-flexible version: %+v", key, a.HeaderV3From, a)
		}
	}
	for _, key := range []int16{-1, 93, 1000, 32767, -32768} {
		if a, ok := LookupAPI(key); ok {
			t.Errorf("LookupAPI(%d) = %+v, want not found", key, a)
		}
	}
}

func TestHeaderVersions(t *testing.T) {
	tests := []struct {
		key, version int16
		req, resp    int
	}{
		{0, 0, 1, 0},  // Produce v0, removed in 4.0 but still decodable
		{0, 8, 1, 0},  // Produce, last non-flexible
		{0, 9, 2, 1},  // Produce, first flexible
		{0, 13, 2, 1}, // Produce v13 from the overlay
		{1, 11, 1, 0}, // Fetch
		{1, 12, 2, 1}, // Fetch
		{3, 8, 1, 0},  // Metadata
		{3, 9, 2, 1},  // Metadata
		{7, 0, 0, 0},  // ControlledShutdown v0: request header v0
		{7, 1, 1, 0},  // ControlledShutdown v1
		{7, 3, 2, 1},  // ControlledShutdown v3
		{17, 0, 1, 0}, // SaslHandshake never flexible
		{17, 1, 1, 0}, // SaslHandshake never flexible
		{18, 0, 1, 0}, // ApiVersions v0
		{18, 2, 1, 0}, // ApiVersions v2
		{18, 3, 2, 0}, // ApiVersions flexible request, response header still v0
		{18, 4, 2, 0}, // ApiVersions
		{18, 5, 2, 0}, // ApiVersions v5 (2026 trunk)
		{47, 0, 1, 0}, // OffsetDelete v0: never flexible
		{47, 1, 3, 1}, // OffsetDelete v1: header v3
		{71, 0, 2, 1}, // GetTelemetrySubscriptions v0
		{71, 1, 3, 1}, // GetTelemetrySubscriptions v1: header v3
		{72, 0, 2, 1}, // PushTelemetry v0
		{72, 1, 3, 1}, // PushTelemetry v1: header v3
		{83, 0, 2, 1}, // InitializeShareGroupState v0
		{83, 1, 3, 1}, // InitializeShareGroupState v1: header v3
		{87, 1, 3, 1}, // ReadShareGroupStateSummary v1: header v3
		{88, 0, 2, 1}, // StreamsGroupHeartbeat
		{88, 1, 2, 1}, // StreamsGroupHeartbeat v1 (Kafka 4.4)
		{92, 0, 2, 1}, // DeleteShareGroupOffsets
		{74, 1, 2, 1}, // ListConfigResources v1
		{76, 1, 2, 1}, // ShareGroupHeartbeat v1
		{9, 10, 2, 1}, // OffsetFetch v10 from the overlay
		{15, 6, 2, 1}, // DescribeGroups v6 from the overlay
		{36, 1, 1, 0}, // SaslAuthenticate v1
		{36, 2, 2, 1}, // SaslAuthenticate v2
	}
	for _, tt := range tests {
		a, ok := LookupAPI(tt.key)
		if !ok {
			t.Fatalf("LookupAPI(%d): not found", tt.key)
		}
		if !a.Valid(tt.version) {
			t.Errorf("%s v%d: not valid", a.Name, tt.version)
		}
		if got := a.RequestHeaderVersion(tt.version); got != tt.req {
			t.Errorf("%s v%d: request header v%d, want v%d", a.Name, tt.version, got, tt.req)
		}
		if got := a.ResponseHeaderVersion(tt.version); got != tt.resp {
			t.Errorf("%s v%d: response header v%d, want v%d", a.Name, tt.version, got, tt.resp)
		}
	}
}

func TestValid(t *testing.T) {
	produce, _ := LookupAPI(0)
	for v, want := range map[int16]bool{-1: false, 0: true, 2: true, 13: true, 14: false, 32767: false} {
		if got := produce.Valid(v); got != want {
			t.Errorf("Produce.Valid(%d) = %v, want %v", v, got, want)
		}
	}
	sasl, _ := LookupAPI(17)
	if sasl.Valid(2) {
		t.Error("SaslHandshake.Valid(2) = true")
	}
}

func TestAPIName(t *testing.T) {
	for key, want := range map[int16]string{
		0:  "Produce",
		18: "ApiVersions",
		71: "GetTelemetrySubscriptions",
		74: "ListConfigResources",
		92: "DeleteShareGroupOffsets",
		93: "Unknown(93)",
		-1: "Unknown(-1)",
	} {
		if got := APIName(key); got != want {
			t.Errorf("APIName(%d) = %q, want %q", key, got, want)
		}
	}
}

func TestAPITableWithHeaderV3(t *testing.T) {
	def := DefaultAPITable()
	t2 := def.WithHeaderV3(9, 10) // OffsetFetch v10+
	t3 := t2.WithHeaderV3(0, 14)  // Produce v14, newer than the table
	t4 := t3.WithHeaderV3(71, 5)  // GetTelemetrySubscriptions: v1 stays mapped
	t5 := t4.WithHeaderV3(93, 0)  // unknown key stays unknown
	t6 := t5.WithHeaderV3(47, -1) // negative: no change

	// The receiver never changes.
	if a, _ := def.Lookup(9); a.HeaderV3From != -1 {
		t.Errorf("default table changed: %+v", a)
	}
	if a, _ := t2.Lookup(0); a.MaxVersion != 13 || a.HeaderV3From != -1 {
		t.Errorf("t2 changed by t3: %+v", a)
	}
	// The package-level lookups use the built-in table.
	if a, _ := LookupAPI(9); a.HeaderV3From != -1 {
		t.Errorf("LookupAPI changed: %+v", a)
	}

	a, ok := t6.Lookup(9)
	if !ok || a.HeaderV3From != 10 || a.RequestHeaderVersion(9) != 2 || a.RequestHeaderVersion(10) != 3 {
		t.Errorf("OffsetFetch with override: %+v", a)
	}
	a, _ = t6.Lookup(0)
	if a.MaxVersion != 14 || !a.Valid(14) || a.HeaderV3From != 14 || a.RequestHeaderVersion(14) != 3 || a.RequestHeaderVersion(13) != 2 {
		t.Errorf("Produce with override: %+v", a)
	}
	a, _ = t6.Lookup(71)
	if a.HeaderV3From != 1 || a.MaxVersion != 5 || a.RequestHeaderVersion(1) != 3 {
		t.Errorf("GetTelemetrySubscriptions with override: %+v", a)
	}
	a, _ = t6.Lookup(47)
	if a.HeaderV3From != 1 {
		t.Errorf("OffsetDelete after negative override: %+v", a)
	}
	if _, ok := t6.Lookup(93); ok {
		t.Error("key 93 became known")
	}

	// A new version of a never-flexible key becomes flexible.
	a, _ = DefaultAPITable().WithHeaderV3(17, 2).Lookup(17)
	if a.MaxVersion != 2 || a.FlexibleFrom != 2 || a.RequestHeaderVersion(1) != 1 || a.RequestHeaderVersion(2) != 3 || a.ResponseHeaderVersion(2) != 1 {
		t.Errorf("SaslHandshake v2 override: %+v", a)
	}
	// ApiVersions responses stay on header v0 whatever the request header.
	a, _ = DefaultAPITable().WithHeaderV3(18, 4).Lookup(18)
	if a.RequestHeaderVersion(4) != 3 || a.ResponseHeaderVersion(4) != 0 {
		t.Errorf("ApiVersions override: %+v", a)
	}

	// A nil table is the default table.
	var nilTable *APITable
	if a, ok := nilTable.Lookup(0); !ok || a.Name != "Produce" {
		t.Errorf("nil table Lookup(0) = %+v, %v", a, ok)
	}
	if a, _ := nilTable.WithHeaderV3(9, 10).Lookup(9); a.HeaderV3From != 10 {
		t.Errorf("nil table WithHeaderV3: %+v", a)
	}
}

func TestParseHeaderV3(t *testing.T) {
	tests := []struct {
		in         string
		key, minV  int16
		errContain string
	}{
		{"9:10", 9, 10, ""},
		{"OffsetFetch:10", 9, 10, ""},
		{"offsetfetch:10", 9, 10, ""},
		{"  METADATA : 13 ", 3, 13, ""},
		{"ListConfigResources:2", 74, 2, ""},
		{"92:0", 92, 0, ""},
		{"0:32767", 0, 32767, ""},
		{"", 0, 0, "want KEY:MINVERSION"},
		{"9", 0, 0, "want KEY:MINVERSION"},
		{"OffsetFetch", 0, 0, "want KEY:MINVERSION"},
		{":3", 0, 0, "empty API key"},
		{"9:", 0, 0, "not a number"},
		{"9:x", 0, 0, "not a number"},
		{"9:-1", 0, 0, "not a number"},
		{"9:32768", 0, 0, "not a number"},
		{"9:1:2", 0, 0, "not a number"},
		{"93:1", 0, 0, "unknown API key 93"},
		{"-1:1", 0, 0, "unknown API key -1"},
		{"99999:1", 0, 0, "unknown API"},
		{"NoSuchApi:1", 0, 0, `unknown API "NoSuchApi"`},
		{"OffsetFetchRequest:1", 0, 0, "unknown API"},
	}
	for _, tt := range tests {
		key, minV, err := ParseHeaderV3(tt.in)
		if tt.errContain != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errContain) {
				t.Errorf("ParseHeaderV3(%q) error = %v, want one containing %q", tt.in, err, tt.errContain)
			}
			continue
		}
		if err != nil || key != tt.key || minV != tt.minV {
			t.Errorf("ParseHeaderV3(%q) = %d, %d, %v; want %d, %d", tt.in, key, minV, err, tt.key, tt.minV)
		}
	}
}
