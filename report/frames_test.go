package report

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// framesFixture is a run of two inputs as the command's sink sees it:
// requests and responses of three connections, one over IPv6, one crossing
// into the second file (a rotated capture), a response with several codes,
// an unmatched response, a Produce with acks=0, a hostile client ID and a
// client ID that holds the separators. The request rows are linked to
// their responses as the command's hold links them.
func framesFixture() ([]FrameRecord, FramesSummary) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(file int, frame int64, us int) kafka.FrameRef {
		return kafka.FrameRef{File: file, Frame: frame, Time: t0.Add(time.Duration(us) * time.Microsecond)}
	}
	files := []string{"a.pcap", "b.pcap"}
	c1 := &kafka.Conn{ID: 1, Endpoints: kafka.Endpoints{Client: netip.MustParseAddrPort("10.0.1.52:48120"), Broker: netip.MustParseAddrPort("10.0.0.2:9092")}}
	c2 := &kafka.Conn{ID: 2, Endpoints: kafka.Endpoints{Client: netip.MustParseAddrPort("[2001:db8::1]:50000"), Broker: netip.MustParseAddrPort("[2001:db8::2]:9092")}}
	c3 := &kafka.Conn{ID: 3, Endpoints: kafka.Endpoints{Client: netip.MustParseAddrPort("10.0.1.53:41936"), Broker: netip.MustParseAddrPort("10.0.0.2:9092")}}
	inst := kafka.UUID{0x4e, 0xd4, 0x2e, 0xd5, 0x21, 0x45, 0x4c, 0xe1, 0xb4, 0x71, 0x96, 0x18, 0x51, 0xac, 0x6e, 0x2e}
	req := func(a kafka.FrameRef, key, ver int16, corr int32, cid string, hasInst bool) *decode.Event {
		return &decode.Event{Kind: decode.EventRequest, Side: kafka.ToBroker, At: a, Msg: decode.Message{
			Request: decode.RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: corr, HeaderVersion: 2,
				ClientID: cid, InstanceID: inst, HasInstanceID: hasInst, Known: true}}}
	}
	resp := func(a kafka.FrameRef, rq *decode.Event, ans decode.Answer) *decode.Event {
		e := &decode.Event{Kind: decode.EventResponse, Side: kafka.ToClient, At: a, Msg: decode.Message{Answer: ans}}
		e.Msg.Response.CorrelationID = rq.Msg.Request.CorrelationID
		e.Msg.Request, e.Msg.RequestAt, e.Msg.Matched = rq.Msg.Request, rq.At, true
		return e
	}
	ok := decode.Answer{HasErrorCode: true}
	type ev struct {
		c *kafka.Conn
		e *decode.Event
	}
	r1 := req(at(0, 4, 2300), 18, 3, 0, "orders-app", true)
	r2 := req(at(0, 6, 5200), 3, 12, 1, "orders-app", true)
	r3 := req(at(0, 8, 6100), 71, 0, 2, "tab\there, comma; \"quote\" 'single'", false)
	r4 := req(at(0, 10, 7000), 68, 0, 7, hostile, false)
	r5 := req(at(0, 12, 7500), 0, 3, 8, "fire-and-forget", false)
	r5.Msg.NoResponse = true
	r6 := req(at(0, 14, 45100000), 0, 9, 3, "orders-app", true) // answered in b.pcap
	unmatched := &decode.Event{Kind: decode.EventResponse, Side: kafka.ToClient, At: at(0, 15, 45150000)}
	unmatched.Msg.Response.CorrelationID = -5
	run := []ev{
		{c1, r1}, {c1, resp(at(0, 5, 3100), r1, ok)},
		{c1, r2}, {c1, resp(at(0, 7, 6000), r2, ok)},
		{c2, r3}, {c3, r4}, {c3, r5},
		{c2, resp(at(0, 9, 7900), r3, decode.Answer{HasErrorCode: true, ErrorCode: 42})},
		{c3, resp(at(0, 11, 45018200), r4, decode.Answer{NestedRead: true, Nested: []int16{0, 6, 25}})},
		{c1, r6}, {c3, unmatched},
		{c1, resp(at(1, 2, 45400300), r6, decode.Answer{NestedRead: true, Nested: []int16{6}})},
	}
	var recs []FrameRecord
	byFrame := map[kafka.FrameRef]int{}
	for _, x := range run {
		r := NewFrameRecord(files, x.c, x.e, UUIDKafka)
		if x.e.Kind == decode.EventResponse && x.e.Msg.Matched {
			k := x.e.Msg.RequestAt
			recs[byFrame[kafka.FrameRef{File: k.File, Frame: k.Frame}]].SetResponse(&r)
		}
		byFrame[kafka.FrameRef{File: x.e.At.File, Frame: x.e.At.Frame}] = len(recs)
		recs = append(recs, r)
	}
	sum := FramesSummary{Packets: 40, Bytes: 9000, Connections: 3, Requests: 6, Responses: 6, Unmatched: 1,
		Listed: int64(len(recs)), Start: t0}
	return recs, sum
}

func writeFrames(t *testing.T, opt FramesOptions, recs []FrameRecord, sum FramesSummary) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := NewFramesWriter(&out, opt)
	if err != nil {
		t.Fatalf("%+v: %v", opt, err)
	}
	for i := range recs {
		if err := w.Add(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(sum); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// TestFramesGolden: every format and -e/-E shape of frames on the fixture.
func TestFramesGolden(t *testing.T) {
	recs, sum := framesFixture()
	cases := []struct {
		name string
		opt  FramesOptions
	}{
		{"table", FramesOptions{Format: "table"}},
		{"csv", FramesOptions{Format: "csv"}},
		{"tsv", FramesOptions{Format: "tsv"}},
		{"json", FramesOptions{Format: "json"}},
		{"ndjson", FramesOptions{Format: "ndjson"}},
		{"fields", FramesOptions{Format: "fields", Fields: []string{"frame", "time", "connection_id", "direction",
			"api_name", "client_id", "error_codes", "request_frame", "request_file", "response_frame", "response_file", "latency"}}},
		{"fields-header-quote-d", FramesOptions{Format: "fields", Fields: []string{"frame", "client_id", "error_codes"},
			Header: yes(), Quote: '"'}},
		{"fields-separator-comma", FramesOptions{Format: "fields", Fields: []string{"frame", "client_id", "error_codes"},
			Separator: ',', Aggregator: "|"}},
		{"fields-quote-s-space", FramesOptions{Format: "fields", Fields: []string{"frame", "client_id"},
			Separator: ' ', Quote: '\''}},
		{"csv-fields-no-header", FramesOptions{Format: "csv", Fields: []string{"frame", "client_id", "error_codes", "latency"},
			Header: no()}},
		{"ndjson-fields", FramesOptions{Format: "ndjson", Fields: []string{"frame", "request_frame", "response_frame", "latency", "error_codes"}}},
		{"json-fields", FramesOptions{Format: "json", Fields: []string{"frame", "client_id", "latency"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			golden(t, "frames_"+c.name+".golden", writeFrames(t, c.opt, recs, sum))
		})
	}
}

// TestFramesLinks: request_frame, response_frame and latency as the
// fixture's events make them, in JSON.
func TestFramesLinks(t *testing.T) {
	recs, _ := framesFixture()
	type link struct {
		Frame         int64    `json:"frame"`
		RequestFrame  *int64   `json:"request_frame"`
		RequestFile   string   `json:"request_file"`
		ResponseFrame *int64   `json:"response_frame"`
		ResponseFile  string   `json:"response_file"`
		Latency       *float64 `json:"latency"`
	}
	got := map[int64]link{}
	for i := range recs {
		b, err := json.Marshal(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		var l link
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		got[l.Frame] = l
	}
	i64 := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	lat := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	for _, w := range []struct {
		frame, req, resp  int64
		reqFile, respFile string
		latency           float64
	}{
		{4, -1, 5, "", "", 0.0008},
		{5, 4, -1, "", "", 0.0008},
		{10, -1, 11, "", "", 45.0112},
		{12, -1, -1, "", "", -1},          // acks=0: no response
		{14, -1, 2, "", "b.pcap", 0.3003}, // answered in the next file
		{15, -1, -1, "", "", -1},          // unmatched
	} {
		l := got[w.frame]
		if i64(l.RequestFrame) != w.req || i64(l.ResponseFrame) != w.resp || l.RequestFile != w.reqFile ||
			l.ResponseFile != w.respFile || lat(l.Latency) != w.latency {
			t.Errorf("frame %d: request %d %q, response %d %q, latency %v; want %d %q, %d %q, %v", w.frame,
				i64(l.RequestFrame), l.RequestFile, i64(l.ResponseFrame), l.ResponseFile, lat(l.Latency),
				w.req, w.reqFile, w.resp, w.respFile, w.latency)
		}
	}
	// The response in b.pcap names its request's file.
	for _, r := range recs {
		if r.File == "b.pcap" && (r.RequestFile != "a.pcap" || r.RequestFrame == nil || *r.RequestFrame != 14) {
			t.Errorf("response in b.pcap: request %v in %q, want frame 14 in a.pcap", r.RequestFrame, r.RequestFile)
		}
	}
}

func TestSecondsText(t *testing.T) {
	for _, c := range []struct {
		d          time.Duration
		text, json string
	}{
		{412345 * time.Nanosecond, "0.000412345", "0.000412345"},
		{1500 * time.Millisecond, "1.500000000", "1.5"},
		{0, "0.000000000", "0"},
		{-3 * time.Microsecond, "-0.000003000", "-0.000003"},
		{90 * time.Second, "90.000000000", "90"},
	} {
		b, _ := json.Marshal(Seconds(c.d))
		if got := Seconds(c.d).text(); got != c.text || string(b) != c.json {
			t.Errorf("%v: text %s json %s, want %s and %s", c.d, got, b, c.text, c.json)
		}
	}
}

// TestFramesTableFits: the table fits 120 columns however long the IDs
// and error lists, names the file above its rows and again where the
// rows pass to another, and leaves no raw control character.
func TestFramesTableFits(t *testing.T) {
	recs, sum := framesFixture()
	long := strings.Repeat("a-very-long-client-id-", 8)
	recs[0].ClientID = &long
	many := make([]ErrorCode, 12)
	for i := range many {
		many[i] = ErrorCode{int16(i), decode.ErrorName(int16(i))}
	}
	recs[1].ErrorCodes = many
	out := string(writeFrames(t, FramesOptions{Format: "table"}, recs, sum))
	checkNoRawControls(t, "frames table", out)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for _, l := range lines[:len(lines)-1] { // the summary line is prose
		if w := twwidth.Width(l); w > frameTableWidth {
			t.Errorf("line %d columns wide, over %d:\n%s", w, frameTableWidth, l)
		}
	}
	var files []string
	for _, l := range lines {
		if l == "a.pcap" || l == "b.pcap" {
			files = append(files, l)
		}
	}
	if strings.Join(files, " ") != "a.pcap b.pcap" || !strings.HasPrefix(out, "a.pcap\nFRAME ") {
		t.Errorf("file lines %q, want a.pcap above the heading, then b.pcap, once each:\n%s", files, out)
	}
	if strings.Contains(out, long) || !strings.Contains(out, "a-very-long") {
		t.Errorf("the long client ID is not cut to fit:\n%s", out)
	}
}

// TestFramesTextEscapes: whatever a client ID holds, every tsv and fields
// line splits into its fields, and csv parses to the fields it wrote.
func TestFramesTextEscapes(t *testing.T) {
	recs, sum := framesFixture()
	for _, opt := range []FramesOptions{
		{Format: "tsv"},
		{Format: "fields", Fields: []string{"frame", "client_id", "error_codes"}},
		{Format: "fields", Fields: []string{"frame", "client_id", "error_codes"}, Separator: ',', Aggregator: "|"},
		{Format: "fields", Fields: []string{"frame", "client_id", "error_codes"}, Separator: ';'},
	} {
		out := string(writeFrames(t, opt, recs, sum))
		checkNoRawControls(t, "frames "+opt.Format, out)
		sep := "\t"
		if opt.Separator != 0 {
			sep = string(opt.Separator)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != len(recs)+1 && len(lines) != len(recs) {
			t.Errorf("%+v: %d lines for %d records", opt, len(lines), len(recs))
		}
		n := -1
		for _, l := range lines {
			k := strings.Count(l, sep)
			if n >= 0 && k != n {
				t.Errorf("%+v: line %q has %d separators, the others %d", opt, l, k, n)
			}
			n = k
		}
	}
	out := writeFrames(t, FramesOptions{Format: "csv", Fields: []string{"frame", "client_id"}}, recs, sum)
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil || len(rows) != len(recs)+1 {
		t.Fatalf("csv: %d rows, %v", len(rows), err)
	}
	if got := rows[5][1]; got != `tab\x09here, comma; "quote" 'single'` {
		t.Errorf("csv client_id %q", got)
	}
	checkCSVCells(t, string(out))
}

// TestFramesOptionErrors: what cannot be written is refused before the run.
func TestFramesOptionErrors(t *testing.T) {
	for _, c := range []struct {
		opt  FramesOptions
		says string
	}{
		{FramesOptions{Format: "fields", Fields: []string{"frame", "nope"}}, `unknown field "nope": the fields are file, frame, time`},
		{FramesOptions{Format: "table", Fields: []string{"frame"}}, "the table has its own columns"},
		{FramesOptions{Format: "json", Header: yes()}, "-E shapes csv, tsv and fields output"},
		{FramesOptions{Format: "table", Quote: '"'}, "-E shapes"},
		{FramesOptions{Format: "csv", Quote: '"'}, "RFC 4180"},
		{FramesOptions{Format: "csv", Separator: '"'}, "cannot part csv fields"},
		{FramesOptions{Format: "fields", Separator: '"', Quote: '"'}, "separator and quote"},
		{FramesOptions{Format: "fields", Separator: ',', Aggregator: ","}, "aggregator"},
		{FramesOptions{Format: "xml"}, "table, json, ndjson, csv, tsv or fields"},
	} {
		_, err := NewFramesWriter(&bytes.Buffer{}, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: error %v, want one saying %q", c.opt, err, c.says)
		}
	}
}

// TestFramesSummaryLine: the counts stay the run's; the filter and the
// hold say what they did.
func TestFramesSummaryLine(t *testing.T) {
	s := FramesSummary{Packets: 10, Requests: 5, Responses: 5, Listed: 4,
		Filter: &FramesFilter{APIKeys: []int16{0, 71}, Connections: []int{3}}, UnlinkedRequests: 2, Hold: 30720}
	want := "10 packets, 0 bytes, 0 connections, 5 requests, 5 responses, 0 unmatched, 0 gaps, 0 resyncs, 0 decode errors; " +
		"4 of 10 messages listed (API Produce, GetTelemetrySubscriptions; connection 3); " +
		"2 requests written before their response came (more than 30,720 messages waited): no response_frame on them"
	if got := s.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var out bytes.Buffer
	w := &framesJSON{w: bufio.NewWriter(&out)}
	if err := w.Finish(s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"listed":4,"filter":{"api_keys":[0,71],"connections":[3]},"unlinked_requests":2`) {
		t.Errorf("json summary %s", out.String())
	}
}
