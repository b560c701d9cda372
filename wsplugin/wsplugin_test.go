package wsplugin

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

// TestTables: every field a body slot fills is declared, with a type that
// fits its kind; every frames field a field mirrors exists; no field is
// declared twice.
func TestTables(t *testing.T) {
	declared := map[string]Field{}
	for _, f := range Fields {
		if _, dup := declared[f.Abbrev]; dup {
			t.Errorf("field %s declared twice", f.Abbrev)
		}
		declared[f.Abbrev] = f
		if f.Frames != "" && !slices.Contains(report.FrameFieldNames(), f.Frames) {
			t.Errorf("field %s mirrors frames field %q, which frames does not have", f.Abbrev, f.Frames)
		}
	}
	for _, e := range Experts() {
		if _, dup := declared[e.Abbrev]; dup {
			t.Errorf("expert %s has a field's name", e.Abbrev)
		}
	}
	want := map[Kind][]FieldType{KInt8: {Int8}, KInt16: {Int16}, KInt32: {Int32}, KBool: {Bool}, KString: {String},
		KBytes: {Uint32}, KInt8s: {Int8}, KStrings: {String}}
	for _, b := range Bodies {
		if _, ok := decode.LookupAPI(b.Key); !ok {
			t.Errorf("body of unknown key %d", b.Key)
		}
		for _, s := range b.Slots {
			if s.Field == "" {
				continue
			}
			if s.Kind == KUUID {
				if declared[s.Field+"_id"].Type != String || declared[s.Field+"_uuid"].Type != GUID {
					t.Errorf("key %d: UUID %s wants fields %[2]s_id (string) and %[2]s_uuid (guid)", b.Key, s.Field)
				}
				continue
			}
			f, ok := declared[s.Field]
			if !ok || !slices.Contains(want[s.Kind], f.Type) {
				t.Errorf("key %d: slot %s (%s) has no field of a fitting type (%v)", b.Key, s.Field, s.Kind, f.Type)
			}
		}
	}
}

// read is the Go twin of the plugin's read_body: it reads a body by its
// layout into each field's values (UUIDs in Kafka's form, bytes as their
// length).
func read(l Body, version int16, flexible bool, b []byte) (map[string][]string, error) {
	got := map[string][]string{}
	off := 0
	take := func(n int) ([]byte, error) {
		if n < 0 || off+n > len(b) {
			return nil, errors.New("short")
		}
		off += n
		return b[off-n : off], nil
	}
	count := func() (int, error) {
		if flexible {
			v, n := binary.Uvarint(b[off:])
			if n <= 0 {
				return 0, errors.New("varint")
			}
			off += n
			return int(v) - 1, nil
		}
		x, err := take(4)
		if err != nil {
			return 0, err
		}
		return int(int32(binary.BigEndian.Uint32(x))), nil
	}
	str := func() (string, bool, error) {
		var n int
		if flexible {
			v, k := binary.Uvarint(b[off:])
			if k <= 0 {
				return "", false, errors.New("varint")
			}
			off += k
			n = int(v) - 1
		} else {
			x, err := take(2)
			if err != nil {
				return "", false, err
			}
			n = int(int16(binary.BigEndian.Uint16(x)))
		}
		if n < 0 {
			return "", false, nil
		}
		x, err := take(n)
		return string(x), true, err
	}
	add := func(f, v string) {
		if f != "" {
			got[f] = append(got[f], v)
		}
	}
	for _, s := range l.Slots {
		if !s.Has(version) {
			continue
		}
		switch s.Kind {
		case KInt8, KInt16, KInt32, KBool:
			size := map[Kind]int{KInt8: 1, KInt16: 2, KInt32: 4, KBool: 1}[s.Kind]
			x, err := take(size)
			if err != nil {
				return nil, err
			}
			switch s.Kind {
			case KInt8:
				add(s.Field, strconv.Itoa(int(int8(x[0]))))
			case KBool:
				add(s.Field, strconv.FormatBool(x[0] != 0))
			case KInt16:
				add(s.Field, strconv.Itoa(int(int16(binary.BigEndian.Uint16(x)))))
			default:
				add(s.Field, strconv.Itoa(int(int32(binary.BigEndian.Uint32(x)))))
			}
		case KUUID:
			x, err := take(16)
			if err != nil {
				return nil, err
			}
			add(s.Field, base64.RawURLEncoding.EncodeToString(x))
		case KString:
			v, ok, err := str()
			if err != nil {
				return nil, err
			}
			if ok {
				add(s.Field, v)
			}
		case KBytes:
			n, err := count()
			if err != nil {
				return nil, err
			}
			if _, err := take(max(n, 0)); err != nil {
				return nil, err
			}
			add(s.Field, strconv.Itoa(max(n, 0)))
		case KInt8s, KStrings:
			n, err := count()
			if err != nil {
				return nil, err
			}
			for range max(n, 0) {
				if s.Kind == KInt8s {
					x, err := take(1)
					if err != nil {
						return nil, err
					}
					add(s.Field, strconv.Itoa(int(int8(x[0]))))
				} else {
					v, ok, err := str()
					if err != nil {
						return nil, err
					}
					if ok {
						add(s.Field, v)
					}
				}
			}
		}
	}
	if l.Whole {
		if flexible {
			if c, n := binary.Uvarint(b[off:]); n != 1 || c != 0 {
				return nil, errors.New("tags")
			}
			off++
		}
		if off != len(b) {
			return nil, fmt.Errorf("%d bytes after the last field", len(b)-off)
		}
	}
	return got, nil
}

var id = [16]byte{0x17, 0xef, 0xc8, 0x87, 0x7f, 0xa0, 0x44, 0x7e, 0xb3, 0xc2, 0xf5, 0x05, 0x6d, 0xd5, 0xb4, 0xed}

// message is what kmsg's requests and responses have in common.
type message interface {
	SetVersion(int16)
	MaxVersion() int16
	AppendTo([]byte) []byte
}

// layoutCase is a body kmsg encodes and the values its layout must read.
type layoutCase struct {
	key      int16
	response bool
	msg      func(v int16) (message, map[string][]string)
}

var layoutCases = []layoutCase{
	{71, false, func(v int16) (message, map[string][]string) {
		return &kmsg.GetTelemetrySubscriptionsRequest{ClientInstanceID: id},
			map[string][]string{"telemetry.client_instance": {"F-_Ih3-gRH6zwvUFbdW07Q"}}
	}},
	{71, true, func(v int16) (message, map[string][]string) {
		return &kmsg.GetTelemetrySubscriptionsResponse{ThrottleMillis: 5, ErrorCode: 42, ClientInstanceID: id, SubscriptionID: -7,
				AcceptedCompressionTypes: []int8{0, 4}, PushIntervalMillis: 30000, TelemetryMaxBytes: 1 << 20, DeltaTemporality: true,
				RequestedMetrics: []string{"org.apache.kafka.", ""}},
			map[string][]string{"telemetry.throttle_time_ms": {"5"}, "telemetry.error_code": {"42"},
				"telemetry.client_instance": {"F-_Ih3-gRH6zwvUFbdW07Q"}, "telemetry.subscription_id": {"-7"},
				"telemetry.accepted_compression_type": {"0", "4"}, "telemetry.push_interval_ms": {"30000"},
				"telemetry.max_bytes": {"1048576"}, "telemetry.delta_temporality": {"true"},
				"telemetry.requested_metric": {"org.apache.kafka.", ""}}
	}},
	{72, false, func(v int16) (message, map[string][]string) {
		return &kmsg.PushTelemetryRequest{ClientInstanceID: id, SubscriptionID: 9, Terminating: true, CompressionType: 3, Metrics: []byte("secret")},
			map[string][]string{"telemetry.client_instance": {"F-_Ih3-gRH6zwvUFbdW07Q"}, "telemetry.subscription_id": {"9"},
				"telemetry.terminating": {"true"}, "telemetry.compression_type": {"3"}, "telemetry.metrics_length": {"6"}}
	}},
	{72, true, func(v int16) (message, map[string][]string) {
		return &kmsg.PushTelemetryResponse{ThrottleMillis: 1, ErrorCode: 76},
			map[string][]string{"telemetry.throttle_time_ms": {"1"}, "telemetry.error_code": {"76"}}
	}},
	{11, false, func(v int16) (message, map[string][]string) {
		gi := "static-1"
		want := map[string][]string{"group.id": {"orders"}, "group.member_id": {"m-1"}}
		if v >= 5 {
			want["group.instance_id"] = []string{gi}
		}
		return &kmsg.JoinGroupRequest{Group: "orders", SessionTimeoutMillis: 45000, RebalanceTimeoutMillis: 60000, MemberID: "m-1",
			InstanceID: &gi, ProtocolType: "consumer", Protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{1, 2}}}}, want
	}},
	{11, true, func(v int16) (message, map[string][]string) {
		pt, pn := "consumer", "range"
		want := map[string][]string{"group.error_code": {"79"}, "group.generation_id": {"-1"}, "group.leader": {"m-0"}, "group.member_id": {"m-2"}}
		if v >= 2 {
			want["group.throttle_time_ms"] = []string{"3"}
		}
		return &kmsg.JoinGroupResponse{ThrottleMillis: 3, ErrorCode: 79, Generation: -1, ProtocolType: &pt, Protocol: &pn,
			LeaderID: "m-0", SkipAssignment: true, MemberID: "m-2", Members: []kmsg.JoinGroupResponseMember{{MemberID: "m-0"}}}, want
	}},
	{68, false, func(v int16) (message, map[string][]string) {
		gi := "static-2"
		return &kmsg.ConsumerGroupHeartbeatRequest{Group: "orders", MemberID: "Hb4mN1cTQ6ikW0rEyu5fJA", MemberEpoch: 2, InstanceID: &gi,
				RebalanceTimeoutMillis: 1000, SubscribedTopicNames: []string{"t"}},
			map[string][]string{"group.id": {"orders"}, "group.member_id": {"Hb4mN1cTQ6ikW0rEyu5fJA"}, "group.member_epoch": {"2"},
				"group.instance_id": {"static-2"}}
	}},
	{68, true, func(v int16) (message, map[string][]string) {
		msg, member := "no", "Hb4mN1cTQ6ikW0rEyu5fJA"
		return &kmsg.ConsumerGroupHeartbeatResponse{ThrottleMillis: 2, ErrorCode: 25, ErrorMessage: &msg, MemberID: &member, MemberEpoch: 3,
				HeartbeatIntervalMillis: 500},
			map[string][]string{"group.throttle_time_ms": {"2"}, "group.error_code": {"25"}, "group.error_message": {"no"},
				"group.member_id": {member}, "group.member_epoch": {"3"}, "group.heartbeat_interval_ms": {"500"}}
	}},
}

// v1Telemetry makes a KIP-1313 v1 body, which kmsg does not know, from
// its v0 encoding: the v0 body without ClientInstanceId.
func v1Telemetry(key int16, response bool, v0 []byte) []byte {
	at := -1
	switch {
	case !response:
		at = 0 // both requests start with it
	case key == 71:
		at = 6 // after ThrottleTimeMs and ErrorCode
	}
	if at < 0 {
		return v0
	}
	return append(append([]byte(nil), v0[:at]...), v0[at+16:]...)
}

// TestBodiesAgainstKmsg: each layout reads, in every version it
// describes, what franz-go's kmsg encodes, field for field.
func TestBodiesAgainstKmsg(t *testing.T) {
	for _, c := range layoutCases {
		var l *Body
		for i := range Bodies {
			if Bodies[i].Key == c.key && Bodies[i].Response == c.response {
				l = &Bodies[i]
			}
		}
		if l == nil {
			t.Fatalf("no layout for key %d response %v", c.key, c.response)
		}
		api, _ := decode.LookupAPI(c.key)
		for v := int16(0); v <= l.MaxVersion; v++ {
			m, want := c.msg(v)
			kv := min(v, m.MaxVersion())
			m.SetVersion(kv)
			b := m.AppendTo(nil)
			if v > kv {
				if c.key != 71 && c.key != 72 {
					t.Fatalf("key %d v%d: kmsg stops at v%d", c.key, v, kv)
				}
				b = v1Telemetry(c.key, c.response, b)
				for f := range want {
					if strings.HasSuffix(f, "client_instance") {
						delete(want, f)
					}
				}
			}
			got, err := read(*l, v, api.RequestHeaderVersion(v) >= 2, b)
			if err != nil {
				t.Errorf("key %d v%d response %v: %v", c.key, v, c.response, err)
				continue
			}
			for f, w := range want {
				if !slices.Equal(got[f], w) {
					t.Errorf("key %d v%d response %v: %s %q, want %q", c.key, v, c.response, f, got[f], w)
				}
			}
			for f := range got {
				if _, ok := want[f]; !ok {
					t.Errorf("key %d v%d response %v: %s %q read, not in the message", c.key, v, c.response, f, got[f])
				}
			}
		}
	}
}

// TestGenerate: the plugin names the version, carries the API table's
// header versions as the decoder computes them, every rule, every field
// and expert, and the --header-v3 additions.
func TestGenerate(t *testing.T) {
	var b bytes.Buffer
	if err := Generate(&b, Options{Version: "v9.9.9"}); err != nil {
		t.Fatal(err)
	}
	lua := b.String()
	for _, want := range []string{
		`local KIDSCOPE_VERSION = "v9.9.9"`,
		`[71] = {"GetTelemetrySubscriptions", 0, 1, "23", "11", 2},`,
		`[17] = {"SaslHandshake", 0, 1, "11", "00", 1},`,
		`[18] = {"ApiVersions", 0, 5, "111222", "000000", 2},`,
		`[7] = {"ControlledShutdown", 0, 3, "0112", "0001", 2},`,
		"register_postdissector(proto)",
	} {
		if !strings.Contains(lua, want) {
			t.Errorf("plugin without %s", want)
		}
	}
	for _, r := range rules.Catalog() {
		if !strings.Contains(lua, "["+luaString(r.ID)+"] = {"+luaString(r.Severity.String())+", ") {
			t.Errorf("plugin without rule %s", r.ID)
		}
	}
	for _, f := range Fields {
		if !strings.Contains(lua, `"kidscope.`+f.Abbrev+`"`) {
			t.Errorf("plugin without field %s", f.Abbrev)
		}
	}
	for _, e := range Experts() {
		if !strings.Contains(lua, `ProtoExpert.new("kidscope.`+e.Abbrev+`"`) {
			t.Errorf("plugin without expert %s", e.Abbrev)
		}
	}
	// Never a body's bytes: the metrics' length points at its prefix.
	if strings.Contains(lua, "tree:add(pf[name], data") {
		t.Error("the plugin adds a data range")
	}

	b.Reset()
	if err := Generate(&b, Options{Table: decode.DefaultAPITable().WithHeaderV3(9, 10)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `[9] = {"OffsetFetch", 0, 10, "11111122223", "00000011111", 2},`) {
		t.Errorf("--header-v3 9:10 not in the table: %s", b.String()[strings.Index(b.String(), "[9] = "):][:80])
	}
}

func TestLuaString(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:        `"plain"`,
		`a "q" \ b`:    `"a \"q\" \\ b"`,
		"line\nbreak":  `"line\010break"`,
		"→ utf-8 kept": `"→ utf-8 kept"`,
	} {
		if got := luaString(in); got != want {
			t.Errorf("luaString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestPersonalDir(t *testing.T) {
	env := map[string]string{"HOME": "/home/ana", "APPDATA": `C:\Users\ana\AppData\Roaming`}
	get := func(k string) string { return env[k] }
	if d, err := PersonalDir("linux", get); err != nil || d != "/home/ana/.local/lib/wireshark/plugins" {
		t.Errorf("linux: %q %v", d, err)
	}
	if d, err := PersonalDir("darwin", get); err != nil || d != "/home/ana/.local/lib/wireshark/plugins" {
		t.Errorf("darwin: %q %v", d, err)
	}
	if d, err := PersonalDir("windows", get); err != nil || !strings.HasSuffix(d, "plugins") || !strings.HasPrefix(d, env["APPDATA"]) {
		t.Errorf("windows: %q %v", d, err)
	}
	if _, err := PersonalDir("linux", func(string) string { return "" }); err == nil {
		t.Error("no HOME, no error")
	}
}

// TestDocsFields: docs/wireshark.md lists the fields as the tables are.
func TestDocsFields(t *testing.T) {
	doc, err := os.ReadFile("../docs/wireshark.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), MarkdownFields()) {
		t.Errorf("docs/wireshark.md does not hold the field table as the plugin has it: replace it with\n%s", MarkdownFields())
	}
}
