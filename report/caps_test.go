package report

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 20000: "20,000", 299999: "299,999",
		1234567: "1,234,567", -1234: "-1,234", -12: "-12"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}

// cappedAnalysis is what the engine makes of a run past its caps: one
// connection whose every request changes its established header ID and is
// rejected (findings and broker evidence past their caps), many short
// connections, each with its own instance ID (connection rows and
// instances past theirs), connections to more brokers than listed, and
// connections the reassembly's cap left out.
func cappedAnalysis() *Analysis {
	e := rules.New(rules.Options{MaxFindings: 20, MaxEvidence: 5, MaxConnections: 4, MaxInstances: 3, MaxBrokers: 2})
	var frame int64
	next := func() kafka.FrameRef {
		frame++
		return kafka.FrameRef{Frame: frame, Time: t0.Add(time.Duration(frame) * time.Millisecond)}
	}
	exchange := func(conn int, id kafka.UUID, corr int32, code int16) {
		h := decode.RequestHeader{APIKey: 3, APIVersion: 12, CorrelationID: corr, HeaderVersion: 2,
			ClientID: "app", InstanceID: id, HasInstanceID: true, Known: true}
		req := decode.Event{Kind: decode.EventRequest, Side: kafka.ToBroker, At: next(), Msg: decode.Message{Request: h}}
		e.Event(conn, &req)
		resp := decode.Event{Kind: decode.EventResponse, Side: kafka.ToClient, At: next(), Msg: decode.Message{
			Request: h, RequestAt: req.At, Matched: true, Response: decode.ResponseHeader{CorrelationID: corr},
			Answer: decode.Answer{ErrorCode: code, HasErrorCode: true}}}
		e.Event(conn, &resp)
	}
	open := func(id int, client, broker string) {
		e.Open(kafka.Conn{ID: id, Endpoints: kafka.Endpoints{Client: ap(client), Broker: ap(broker)}, First: next()})
	}
	closeConn := func(id int) { e.Close(id, kafka.Close{Seen: true, By: kafka.ToBroker, At: next()}, decode.Outcome{}) }

	open(1, "10.1.4.20:51234", "10.1.0.11:9092")
	exchange(1, instA, 1, 0)
	for i := range 2500 {
		exchange(1, otherX, int32(i+2), 42) // header-id-changed, rejected
	}
	closeConn(1)
	for i := 2; i <= 30; i++ {
		broker := "10.1.0.11:9092"
		if i > 25 {
			broker = fmt.Sprintf("10.1.0.%d:9092", 20+i) // past MaxBrokers from the second
		}
		open(i, fmt.Sprintf("10.1.5.%d:40000", i), broker)
		exchange(i, kafka.UUID{0x5b, byte(i), 1}, 1, 0)
		closeConn(i)
	}
	res := e.Result()
	return &Analysis{
		Files: []string{"flood.pcapng"},
		Summary: result.Summary{Files: []string{"flood.pcapng"}, First: t0, Last: t0.Add(time.Duration(frame) * time.Millisecond),
			Capture: capture.Stats{Packets: frame, Bytes: frame * 120}, Connections: 30,
			Counters:   decode.Counters{Requests: 2530, Responses: 2530},
			Reassembly: reassembly.Stats{ConnectionsDropped: 100000}},
		Result: res,
	}
}

// TestCapsNamedEverywhere: what the caps left out is counted, with the
// true counts, in every format.
func TestCapsNamedEverywhere(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  AnalysisOptions
	}{
		{"capped.table", AnalysisOptions{Format: "table"}},
		{"capped.md", AnalysisOptions{Format: "markdown"}},
		{"capped.csv", AnalysisOptions{Format: "csv"}},
		{"capped.json", AnalysisOptions{Format: "json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			golden(t, "analysis_"+c.name+".golden", render(t, cappedAnalysis(), c.opt))
		})
	}
	people := []struct{ what, want string }{
		{"true error count", "2,500 errors"},
		{"the row's true count", "×2,500"},
		{"findings not listed", "2,480 findings not listed"},
		{"evidence frames", "first 5 of 2,500"},
		{"connection rows not listed", "26 connections not listed"},
		{"instances not listed", "28 client instances not listed"},
		{"connections to unlisted brokers", "4 connections to broker endpoints past the first 2 not listed"},
		{"connections not analysed", "100,000 more over --max-connections were not analysed"},
	}
	for _, format := range []string{"table", "markdown"} {
		out := string(render(t, cappedAnalysis(), AnalysisOptions{Format: format}))
		flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ", "<br>", " ", "|", " ").Replace(out)), " ")
		for _, p := range people {
			if !strings.Contains(flat, p.want) {
				t.Errorf("%s: no %s (%q)", format, p.what, p.want)
			}
		}
	}
	recs, err := csv.NewReader(bytes.NewReader(render(t, cappedAnalysis(), AnalysisOptions{Format: "csv"}))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var changed int64
	for _, r := range recs[1:] {
		if r[0] == rules.HeaderIDChanged {
			n, _ := strconv.ParseInt(r[slices.Index(findingColumns, "count")], 10, 64)
			changed += n
		}
	}
	if changed != 2500 {
		t.Errorf("csv: the header-id-changed rows count %d findings, want 2500", changed)
	}
	var doc struct {
		Summary struct {
			BySeverity map[string]int64 `json:"findings_by_severity"`
			Dropped    int64            `json:"dropped_findings"`
			ByRule     map[string]int64 `json:"findings_by_rule"`
		} `json:"summary"`
		Findings []json.RawMessage `json:"findings"`
		Brokers  []struct {
			Frames []int64 `json:"evidence_frames"`
			Total  int64   `json:"evidence_total"`
			Conns  int     `json:"connections"`
		} `json:"brokers"`
		Matrix struct {
			New struct {
				New     int `json:"new_broker"`
				Unknown int `json:"unknown"`
			} `json:"new_client"`
		} `json:"matrix"`
	}
	if err := json.Unmarshal(render(t, cappedAnalysis(), AnalysisOptions{Format: "json"}), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary.BySeverity["error"] != 2500 || doc.Summary.ByRule[rules.HeaderIDChanged] != 2500 ||
		int64(len(doc.Findings))+doc.Summary.Dropped != 2500+doc.Summary.BySeverity["warning"]+doc.Summary.BySeverity["info"] {
		t.Errorf("json summary %+v, %d findings listed", doc.Summary, len(doc.Findings))
	}
	if b := doc.Brokers[0]; len(b.Frames) != 5 || b.Total != 2500 || b.Conns != 25 {
		t.Errorf("json broker %+v", b)
	}
	// The matrix counts every connection, as the brokers do.
	if m := doc.Matrix.New; m.New != 25 || m.Unknown != 5 {
		t.Errorf("json matrix %+v, want 25 connections to the enforcing broker and 5 unknown", m)
	}
}

// TestFramesTableCapped: the frames table keeps its first rows and says how
// many messages it left out.
func TestFramesTableCapped(t *testing.T) {
	var out bytes.Buffer
	w := &framesTable{w: bufio.NewWriter(&out), max: 3}
	for i := range 10 {
		if err := w.Add(&FrameRecord{File: "f", Frame: int64(i + 1), Client: "c", Broker: "b", Direction: "request"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(FramesSummary{}); err != nil {
		t.Fatal(err)
	}
	if len(w.rows) != 3 || !strings.Contains(out.String(), "7 messages not listed: the table keeps the first 3") {
		t.Errorf("%d rows kept; output:\n%s", len(w.rows), out.String())
	}
}
