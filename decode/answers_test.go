package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func encodeResponse(r kmsg.Response, v int16) []byte {
	r.SetVersion(v)
	return r.AppendTo(nil)
}

func TestReadAnswer(t *testing.T) {
	str := func(s string) *string { return &s }
	produce := func(codes ...int16) *kmsg.ProduceResponse {
		r := kmsg.NewPtrProduceResponse()
		t := kmsg.ProduceResponseTopic{Topic: "orders"}
		for i, c := range codes {
			t.Partitions = append(t.Partitions, kmsg.ProduceResponseTopicPartition{Partition: int32(i), ErrorCode: c})
		}
		r.Topics = []kmsg.ProduceResponseTopic{t}
		return r
	}
	fetch := func(top int16, codes ...int16) *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchResponse()
		r.ErrorCode = top
		t := kmsg.FetchResponseTopic{Topic: "orders"}
		for i, c := range codes {
			t.Partitions = append(t.Partitions, kmsg.FetchResponseTopicPartition{Partition: int32(i), ErrorCode: c})
		}
		if len(codes) > 0 {
			r.Topics = []kmsg.FetchResponseTopic{t}
		}
		return r
	}
	cases := []struct {
		name    string
		key, v  int16
		body    kmsg.Response
		hasTop  bool
		top     int16
		nested  []int16
		wantErr bool
	}{
		{name: "Produce v9 every partition rejected", key: 0, v: 9, body: produce(42, 42, 42), nested: []int16{42}},
		{name: "Produce v9 processed", key: 0, v: 9, body: produce(0, 0), nested: []int16{0}},
		{name: "Produce v9 mixed codes in order first seen", key: 0, v: 9, body: produce(6, 42, 6, 0), nested: []int16{6, 42, 0}},
		{name: "Produce v3 no items", key: 0, v: 3, body: produce(), nested: nil},
		{name: "Metadata v12 per topic", key: 3, v: 12, body: &kmsg.MetadataResponse{Topics: []kmsg.MetadataResponseTopic{
			{Topic: str("a"), ErrorCode: 42}, {Topic: str("b"), ErrorCode: 42}}}, nested: []int16{42}},
		{name: "Metadata v13 top level", key: 3, v: 13, body: &kmsg.MetadataResponse{ErrorCode: 42}, hasTop: true, top: 42},
		{name: "Fetch v4 per partition", key: 1, v: 4, body: fetch(0, 42, 42), nested: []int16{42}},
		{name: "Fetch v13 top level", key: 1, v: 13, body: fetch(42), hasTop: true, top: 42},
		{name: "Fetch v13 top level and partitions", key: 1, v: 13, body: fetch(0, 1, 0), hasTop: true, top: 0, nested: []int16{1, 0}},
		{name: "OffsetCommit v8 per partition", key: 8, v: 8, body: &kmsg.OffsetCommitResponse{Topics: []kmsg.OffsetCommitResponseTopic{
			{Topic: "t", Partitions: []kmsg.OffsetCommitResponseTopicPartition{{Partition: 0, ErrorCode: 42}}}}}, nested: []int16{42}},
		{name: "InitProducerId v4", key: 22, v: 4, body: &kmsg.InitProducerIDResponse{ErrorCode: 42, ProducerID: -1}, hasTop: true, top: 42},
		{name: "FindCoordinator v3 top level", key: 10, v: 3, body: &kmsg.FindCoordinatorResponse{ErrorCode: 15}, hasTop: true, top: 15},
		{name: "FindCoordinator v4 per coordinator", key: 10, v: 4, body: &kmsg.FindCoordinatorResponse{
			Coordinators: []kmsg.FindCoordinatorResponseCoordinator{{Key: "g", ErrorCode: 42}}}, nested: []int16{42}},
		{name: "OffsetFetch v7 top level", key: 9, v: 7, body: &kmsg.OffsetFetchResponse{ErrorCode: 42}, hasTop: true, top: 42},
		{name: "OffsetFetch v8 per group", key: 9, v: 8, body: &kmsg.OffsetFetchResponse{Groups: []kmsg.OffsetFetchResponseGroup{
			{Group: "g", ErrorCode: 42}}}, nested: []int16{42}},
		{name: "AddPartitionsToTxn v3 per partition", key: 24, v: 3, body: &kmsg.AddPartitionsToTxnResponse{Topics: []kmsg.AddPartitionsToTxnResponseTopic{
			{Topic: "t", Partitions: []kmsg.AddPartitionsToTxnResponseTopicPartition{{ErrorCode: 42}}}}}, nested: []int16{42}},
		{name: "AddPartitionsToTxn v4 top level", key: 24, v: 4, body: &kmsg.AddPartitionsToTxnResponse{ErrorCode: 42}, hasTop: true, top: 42},
		{name: "DescribeLogDirs v2 per dir", key: 35, v: 2, body: &kmsg.DescribeLogDirsResponse{Dirs: []kmsg.DescribeLogDirsResponseDir{{ErrorCode: 42, Dir: "/d"}}},
			nested: []int16{42}},
		{name: "DescribeLogDirs v3 top level", key: 35, v: 3, body: &kmsg.DescribeLogDirsResponse{ErrorCode: 42}, hasTop: true, top: 42},
		{name: "truncated", key: 0, v: 9, body: produce(42), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeResponse(tc.body, tc.v)
			if tc.wantErr {
				b = b[:len(b)/2]
			}
			a, err := ReadAnswer(tc.key, tc.v, b)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error for a truncated body: %+v", a)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !a.NestedRead || a.HasErrorCode != tc.hasTop || a.ErrorCode != tc.top || !slices.Equal(a.Nested, tc.nested) {
				t.Errorf("got top %v %d nested %v (read %v), want top %v %d nested %v", a.HasErrorCode, a.ErrorCode, a.Nested, a.NestedRead,
					tc.hasTop, tc.top, tc.nested)
			}
			if code, ok := peekTop(tc.key, tc.v, b); ok && (!tc.hasTop || code != tc.top) {
				t.Errorf("peekTop says %d, the full decode %v %d", code, tc.hasTop, tc.top)
			}
		})
	}
}

func TestReadAnswerBeyondKmsg(t *testing.T) {
	// GetTelemetrySubscriptions v1: ThrottleTimeMs, ErrorCode, then the v0
	// fields without ClientInstanceId.
	b := []byte{0, 0, 0, 0, 0, 42, 0, 0, 0, 0}
	a, err := ReadAnswer(KeyGetTelemetrySubscriptions, 1, b)
	if err != nil || !a.HasErrorCode || a.ErrorCode != 42 {
		t.Errorf("GTS v1: %+v %v", a, err)
	}
	if _, err := ReadAnswer(KeyGetTelemetrySubscriptions, 1, b[:5]); err == nil {
		t.Error("GTS v1 shorter than its code: no error")
	}
	if _, err := ReadAnswer(1000, 0, b); err == nil {
		t.Error("unknown key: no error")
	}
	if _, err := ReadAnswer(0, 99, b); err == nil {
		t.Error("unknown version: no error")
	}
}

// TestPeekTopEveryVersion encodes every response version kmsg knows with a
// top-level code and checks that where the table gives a fixed offset, the
// first bytes hold it, whatever the rest of the body holds.
func TestPeekTopEveryVersion(t *testing.T) {
	for key := range answerLayouts {
		l := answerLayouts[key]
		if l.name == "" {
			continue
		}
		for v := int16(0); v <= l.maxVersion; v++ {
			if topAt(int16(key), v) < 0 {
				continue
			}
			r := kmsg.ResponseForKey(int16(key))
			f := reflectSetErrorCode(r, 0x2A)
			if !f {
				t.Errorf("%s v%d: the table gives a top-level code, the type has no ErrorCode", l.name, v)
				continue
			}
			b := encodeResponse(r, v)
			if code, ok := peekTop(int16(key), v, b); !ok || code != 0x2A {
				t.Errorf("%s v%d: peekTop %d %v, want 42", l.name, v, code, ok)
			}
			a, err := ReadAnswer(int16(key), v, b)
			if err != nil || !a.HasErrorCode || a.ErrorCode != 0x2A {
				t.Errorf("%s v%d: ReadAnswer %+v %v", l.name, v, a, err)
			}
		}
	}
}

// TestAnswerLayoutsAgreeWithSchemas checks the table made from kmsg
// against Apache Kafka's message schemas, an independent account of which
// error code fields exist in which version.
func TestAnswerLayoutsAgreeWithSchemas(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "kafka-protocol", "messages")
	files, _ := filepath.Glob(filepath.Join(dir, "*Response.json"))
	if len(files) == 0 {
		t.Skip("Kafka's message schemas are not beside the checkout")
	}
	checked := 0
	for _, f := range files {
		s := readSchema(t, f)
		if s.Type != "response" || int(s.APIKey) >= len(answerLayouts) || answerLayouts[s.APIKey].name == "" {
			continue
		}
		l := answerLayouts[s.APIKey]
		lo, hi := versionRange(s.ValidVersions)
		for v := lo; v <= min(hi, int(l.maxVersion)); v++ {
			top, nested := s.codes(v)
			gotTop := topAt(s.APIKey, int16(v)) != topNone
			if top != gotTop || nested != int(l.nested[v]) {
				t.Errorf("%s v%d: schema says top-level %v, %d nested; the table %v, %d", s.Name, v, top, nested, gotTop, l.nested[v])
			}
			checked++
		}
	}
	if checked < 300 {
		t.Errorf("only %d versions checked", checked)
	}
}

type schemaField struct {
	Name     string        `json:"name"`
	Type     string        `json:"type"`
	Versions string        `json:"versions"`
	Fields   []schemaField `json:"fields"`
}

type schema struct {
	APIKey        int16         `json:"apiKey"`
	Type          string        `json:"type"`
	Name          string        `json:"name"`
	ValidVersions string        `json:"validVersions"`
	Fields        []schemaField `json:"fields"`
	CommonStructs []schemaField `json:"commonStructs"`
}

func readSchema(t *testing.T, path string) schema {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, ln := range bytes.Split(raw, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(ln), []byte("//")) {
			lines = append(lines, ln)
		}
	}
	var s schema
	if err := json.Unmarshal(bytes.Join(lines, []byte("\n")), &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// versionRange reads "3", "0-7" or "4+" (open: to 127).
func versionRange(s string) (int, int) {
	if s == "" || s == "none" {
		return 0, -1
	}
	if lo, ok := strings.CutSuffix(s, "+"); ok {
		n, _ := strconv.Atoi(lo)
		return n, 127
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, _ := strconv.Atoi(lo)
		b, _ := strconv.Atoi(hi)
		return a, b
	}
	n, _ := strconv.Atoi(s)
	return n, n
}

func inVersions(s string, v int) bool {
	lo, hi := versionRange(s)
	return v >= lo && v <= hi
}

// codes counts the int16 *ErrorCode fields version v has: whether one sits
// at the top level, and how many are nested.
func (s schema) codes(v int) (top bool, nested int) {
	common := map[string][]schemaField{}
	for _, c := range s.CommonStructs {
		common[c.Name] = c.Fields
	}
	var walk func(fs []schemaField, depth int)
	walk = func(fs []schemaField, depth int) {
		for _, f := range fs {
			if !inVersions(f.Versions, v) {
				continue
			}
			if f.Type == "int16" && strings.HasSuffix(f.Name, "ErrorCode") {
				if depth == 0 && f.Name == "ErrorCode" {
					top = true
				} else {
					nested++
				}
				continue
			}
			sub := f.Fields
			if sub == nil {
				sub = common[strings.TrimPrefix(f.Type, "[]")]
			}
			walk(sub, depth+1)
		}
	}
	walk(s.Fields, 0)
	return top, nested
}

// reflectSetErrorCode sets the top-level ErrorCode of a kmsg response.
func reflectSetErrorCode(r kmsg.Response, code int16) bool {
	f := reflect.ValueOf(r).Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 {
		return false
	}
	f.SetInt(int64(code))
	return true
}

// TestConnAnswers checks which responses a Conn decodes in full: those of
// the requests idWatch marks, or all with AllAnswers; the top-level code
// of the others is still read from their first bytes.
func TestConnAnswers(t *testing.T) {
	id, other := testID, kafka.UUID{1, 2, 3}
	rejected := func() kmsg.Response {
		return &kmsg.MetadataResponse{Topics: []kmsg.MetadataResponseTopic{{ErrorCode: 42}}}
	}
	large := &kmsg.MetadataResponse{}
	for i := range 100 {
		name := fmt.Sprintf("a-topic-with-a-long-name-%d", i)
		large.Topics = append(large.Topics, kmsg.MetadataResponseTopic{Topic: &name, ErrorCode: 3})
	}
	w := &wire{}
	w.request(3, 12, 1, "c", &id, &kmsg.MetadataRequest{})
	w.response(3, 12, 1, large)
	w.request(3, 12, 5, "c", &id, &kmsg.MetadataRequest{})
	w.response(3, 12, 5, rejected())                          // small: read whatever its request
	w.request(3, 12, 2, "c", &other, &kmsg.MetadataRequest{}) // a changed ID: watched
	w.response(3, 12, 2, rejected())
	w.request(22, 4, 3, "c", &id, &kmsg.InitProducerIDRequest{})
	w.response(22, 4, 3, &kmsg.InitProducerIDResponse{ErrorCode: 42})
	w.request(3, 12, 4, "c", nil, &kmsg.MetadataRequest{}) // the ID dropped: watched
	w.response(3, 12, 4, rejected())
	for _, all := range []bool{false, true} {
		c := NewConn(Options{AllAnswers: all})
		c.Start(kafka.ToBroker, false)
		c.Start(kafka.ToClient, false)
		var got []string
		for _, e := range messages(feed(c, w, [2][]int{})) {
			if e.Kind == EventResponse {
				got = append(got, strconv.Itoa(int(e.Msg.Response.CorrelationID))+":"+answerString(e.Msg.Answer))
			}
		}
		want := "1:- 5:[42] 2:[42] 3:top 42 4:[42]"
		if all {
			want = "1:[3] 5:[42] 2:[42] 3:top 42 4:[42]"
		}
		if strings.Join(got, " ") != want {
			t.Errorf("AllAnswers %v: %q, want %q", all, strings.Join(got, " "), want)
		}
	}
}

func answerString(a Answer) string {
	switch {
	case a.HasErrorCode:
		return "top " + strconv.Itoa(int(a.ErrorCode))
	case a.NestedRead:
		var s []string
		for _, c := range a.Nested {
			s = append(s, strconv.Itoa(int(c)))
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	return "-"
}

func TestIDWatch(t *testing.T) {
	id, other := testID, kafka.UUID{1}
	h := func(hv int, x *kafka.UUID) *RequestHeader {
		r := &RequestHeader{HeaderVersion: hv}
		if x != nil {
			r.InstanceID, r.HasInstanceID = *x, true
		}
		return r
	}
	zero, one := kafka.UUID{}, kafka.UUID{15: 1}
	cases := []struct {
		name string
		reqs []*RequestHeader
		want string // one mark per request
	}{
		{"the same ID throughout", []*RequestHeader{h(2, &id), h(2, &id), h(2, &id)}, "---"},
		{"non-flexible requests never", []*RequestHeader{h(1, nil), h(2, &id), h(1, nil)}, "---"},
		{"old client", []*RequestHeader{h(2, nil), h(2, nil)}, "--"},
		{"changed, then back", []*RequestHeader{h(2, &id), h(2, &other), h(2, &id)}, "-x-"},
		{"dropped", []*RequestHeader{h(2, &id), h(2, nil)}, "-x"},
		{"late", []*RequestHeader{h(2, nil), h(2, &id), h(2, &id)}, "-xx"},
		{"reserved", []*RequestHeader{h(2, &one), h(2, &zero)}, "xx"},
		{"header v3", []*RequestHeader{h(2, &id), h(3, &id)}, "-x"},
	}
	for _, tc := range cases {
		var w idWatch
		var got []byte
		for _, r := range tc.reqs {
			if w.marks(r) {
				got = append(got, 'x')
			} else {
				got = append(got, '-')
			}
		}
		if string(got) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestProduceAcks(t *testing.T) {
	txn := "txn-1"
	for _, v := range []int16{0, 2, 3, 8, 9, 11, 13} {
		for _, acks := range []int16{0, 1, -1} {
			for _, id := range []*string{nil, &txn} {
				r := &kmsg.ProduceRequest{Version: v, Acks: acks, TransactionID: id, TimeoutMillis: 100}
				b := r.AppendTo(nil)
				got, need, ok := produceAcks(v, b)
				if !ok || need != 0 || got != acks {
					t.Errorf("v%d acks %d txn %v: got %d need %d ok %v", v, acks, id != nil, got, need, ok)
				}
				// Cut short, it asks for more, never past what it needs.
				for n := 0; n < len(b) && n < 12; n++ {
					if _, need, ok := produceAcks(v, b[:n]); ok && n < 2 || !ok && need <= n && need != 0 {
						t.Errorf("v%d cut at %d: need %d ok %v", v, n, need, ok)
					}
				}
			}
		}
	}
}

func TestConnAcksZero(t *testing.T) {
	w := &wire{}
	w.request(0, 9, 1, "p", nil, &kmsg.ProduceRequest{Acks: 0, TimeoutMillis: 100})
	w.request(0, 9, 2, "p", nil, &kmsg.ProduceRequest{Acks: -1, TimeoutMillis: 100})
	w.response(0, 9, 2, &kmsg.ProduceResponse{})
	w.request(0, 9, 3, "p", nil, &kmsg.ProduceRequest{Acks: 0, TimeoutMillis: 100})
	c := NewConn(Options{})
	c.Start(kafka.ToBroker, false)
	c.Start(kafka.ToClient, false)
	var noResp []int32
	for _, e := range messages(feed(c, w, [2][]int{})) {
		if e.Kind == EventRequest && e.Msg.NoResponse {
			noResp = append(noResp, e.Msg.Request.CorrelationID)
		}
	}
	cnt := c.Outcome().Counters
	if !slices.Equal(noResp, []int32{1, 3}) || cnt.NoResponse != 2 || cnt.Unanswered != 0 {
		t.Errorf("acks = 0 requests %v, counters %+v", noResp, cnt)
	}
}
