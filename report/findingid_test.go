package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// idFinding is the finding the recipe's tests hash.
func idFinding() (Origin, rules.Finding) {
	return Origin{Agent: "broker-host-1", Run: "4f1c0e2a9b7d3365", File: "eth0"}, rules.Finding{
		Rule: "header-id-changed", Severity: rules.Error, At: kafka.FrameRef{File: 2, Frame: 117, Time: t0},
		Related: []rules.Related{est(2, 5), answer(2, 118)},
		Conn:    kafka.Endpoints{Client: ap("10.1.4.20:51234"), Broker: ap("10.1.0.11:9092")}, ConnID: 7,
		APIKey: 3, APIVersion: 12, HasAPI: true, CorrelationID: 41,
		Expected: rules.Value{Kind: rules.ValueID, ID: instA}, Seen: rules.Value{Kind: rules.ValueID, ID: otherX},
		Answer: rules.Answer{State: rules.Answered, Codes: []int16{42, 0}}, Also: []string{"header-id-zero"}, Count: 1,
	}
}

// TestFindingIDRecipe: the ID is the first 16 bytes of SHA-256 over the
// fields docs/formats.md lists, as netstrings, in hexadecimal; and the
// IDs of these findings are what they were (golden): a change of the
// recipe is a new version of it, never the same one.
func TestFindingIDRecipe(t *testing.T) {
	o, f := idFinding()
	preimage := "21:kidscope-finding-id/1,13:broker-host-1,16:4f1c0e2a9b7d3365,4:eth0,3:117,17:header-id-changed," +
		"15:10.1.4.20:51234,14:10.1.0.11:9092," +
		"2:id,22:Wy88TW5_SoucDR4vOktcbQ,0:,0:,1:0,1:0," +
		"2:id,22:wdLj9KW2TH2On6CxwtPk9Q,0:,0:,1:0,1:0," +
		"8:answered,4:42 0,0:,0:,"
	if got := string(findingIDInput(o, &f)); got != preimage {
		t.Errorf("the list hashed is\n%q\nwant\n%q", got, preimage)
	}
	sum := sha256.Sum256([]byte(preimage))
	if got, want := FindingID(o, &f), hex.EncodeToString(sum[:16]); got != want {
		t.Errorf("FindingID = %s, want %s, the hash of\n%s", got, want, preimage)
	}

	stream := rules.Finding{Rule: "stream-lost-bytes", At: kafka.FrameRef{Frame: 9}, Conn: f.Conn,
		Stream: rules.Stream{Kind: rules.LostBytes, Side: kafka.ToClient, Resynced: true, Skipped: 300}}
	member := rules.Finding{Rule: "heartbeat-member-id-changed", At: kafka.FrameRef{Frame: 30}, Conn: f.Conn,
		Expected: rules.Value{Kind: rules.ValueMemberID, Text: "m-1"}, Seen: rules.Value{Kind: rules.ValueMemberID, Text: "m\x00,2"},
		Answer: rules.Answer{State: rules.NoResponse}}
	addr := rules.Finding{Rule: "instance-id-shared", At: kafka.FrameRef{Frame: 4}, Conn: f.Conn,
		Seen: rules.Value{Kind: rules.ValueSeenElsewhereID, ID: instB, Addr: netip.MustParseAddr("fd00::7")}}
	for _, c := range []struct {
		name string
		o    Origin
		f    rules.Finding
		want string
	}{
		{"agent's", o, f, "0b0c7440fcecc59596690ab2e8402919"},
		{"analyze's", Origin{File: "eth0"}, f, "2ad9efd19e77d823629027beaafe4c64"},
		{"stream", Origin{File: "x.pcap"}, stream, "4f23105a4c1f35a069023cc035c47d63"},
		{"member IDs", Origin{File: "x.pcap"}, member, "975d4d2f16eeb4e5717029692635bc1c"},
		{"address", Origin{File: "x.pcap"}, addr, "f91d82e4cf4a84e91c1f450874b2498f"},
	} {
		got := FindingID(c.o, &c.f)
		if got != c.want {
			t.Errorf("%s: FindingID = %s, want %s", c.name, got, c.want)
		}
	}
}

// TestFindingIDFields: every field the recipe lists makes another ID;
// what it leaves out (where the fleet numbers the finding, its time, its
// supporting frames, its words) does not.
func TestFindingIDFields(t *testing.T) {
	o, f := idFinding()
	base := FindingID(o, &f)
	for name, change := range map[string]func(o *Origin, f *rules.Finding){
		"agent":            func(o *Origin, _ *rules.Finding) { o.Agent = "broker-host-2" },
		"run":              func(o *Origin, _ *rules.Finding) { o.Run = "4f1c0e2a9b7d3366" },
		"no agent":         func(o *Origin, _ *rules.Finding) { o.Agent, o.Run = "", "" },
		"file":             func(o *Origin, _ *rules.Finding) { o.File = "eth1" },
		"agent:file":       func(o *Origin, _ *rules.Finding) { o.File = o.Agent + ":" + o.File },
		"frame":            func(_ *Origin, f *rules.Finding) { f.At.Frame++ },
		"rule":             func(_ *Origin, f *rules.Finding) { f.Rule = "header-id-late" },
		"client":           func(_ *Origin, f *rules.Finding) { f.Conn.Client = ap("10.1.4.20:51235") },
		"broker":           func(_ *Origin, f *rules.Finding) { f.Conn.Broker = ap("10.1.0.12:9092") },
		"expected kind":    func(_ *Origin, f *rules.Finding) { f.Expected.Kind = rules.ValueIDNamed },
		"expected ID":      func(_ *Origin, f *rules.Finding) { f.Expected.ID = instB },
		"expected text":    func(_ *Origin, f *rules.Finding) { f.Expected.Text = "x" },
		"expected address": func(_ *Origin, f *rules.Finding) { f.Expected.Addr = ad("10.0.0.1") },
		"expected version": func(_ *Origin, f *rules.Finding) { f.Expected.Version = 1 },
		"expected code":    func(_ *Origin, f *rules.Finding) { f.Expected.Code = 1 },
		"seen ID":          func(_ *Origin, f *rules.Finding) { f.Seen.ID = instB },
		"seen text":        func(_ *Origin, f *rules.Finding) { f.Seen.Text = "x" },
		"seen code":        func(_ *Origin, f *rules.Finding) { f.Seen.Code = 1 },
		"values swapped":   func(_ *Origin, f *rules.Finding) { f.Expected, f.Seen = f.Seen, f.Expected },
		"answer state":     func(_ *Origin, f *rules.Finding) { f.Answer = rules.Answer{State: rules.NoResponse} },
		"answer codes":     func(_ *Origin, f *rules.Finding) { f.Answer.Codes = []int16{42} },
		"codes in order":   func(_ *Origin, f *rules.Finding) { f.Answer.Codes = []int16{0, 42} },
		"stream kind":      func(_ *Origin, f *rules.Finding) { f.Stream.Kind = rules.NotKafkaBytes },
		"stream side": func(_ *Origin, f *rules.Finding) {
			f.Stream.Kind, f.Stream.Side = rules.LostBytes, kafka.ToClient
			f2 := *f
			f2.Stream.Side = kafka.ToBroker
			if FindingID(o, f) == FindingID(o, &f2) {
				t.Error("the stream's sides have one ID")
			}
		},
	} {
		o2, f2 := o, f
		f2.Answer.Codes = append([]int16(nil), f.Answer.Codes...)
		change(&o2, &f2)
		if FindingID(o2, &f2) == base {
			t.Errorf("%s changed: the ID is the same", name)
		}
	}
	for name, change := range map[string]func(f *rules.Finding){
		"file index":     func(f *rules.Finding) { f.At.File = 0 },
		"time":           func(f *rules.Finding) { f.At.Time = f.At.Time.Add(time.Hour) },
		"connection":     func(f *rules.Finding) { f.ConnID = 1 },
		"related":        func(f *rules.Finding) { f.Related = nil },
		"count":          func(f *rules.Finding) { f.Count = 5 },
		"also":           func(f *rules.Finding) { f.Also = nil },
		"after gap":      func(f *rules.Finding) { f.AfterGap = true },
		"severity":       func(f *rules.Finding) { f.Severity = rules.Warning },
		"api":            func(f *rules.Finding) { f.APIVersion, f.CorrelationID = 11, 40 },
		"resync skipped": func(f *rules.Finding) { f.Stream.Resynced, f.Stream.Skipped = true, 9 },
	} {
		f2 := f
		change(&f2)
		if FindingID(o, &f2) != base {
			t.Errorf("%s changed: the ID changed", name)
		}
	}
	// A field's text cannot spill into the next: agent "a\x00" of run
	// "b" is not agent "a" of run "\x00b", nor "a," of run "b".
	seen := map[string]string{}
	for _, o := range []Origin{{"a\x00", "b", "f"}, {"a", "\x00b", "f"}, {"a,", "b", "f"}, {"a", ",b", "f"}, {"a", "b", "f"}, {"ab", "", "f"}} {
		id := FindingID(o, &f)
		if prev, ok := seen[id]; ok {
			t.Errorf("origins %q and %q have one ID", prev, o)
		}
		seen[id] = fmt.Sprintf("%q", o)
	}
	if len(base) != 32 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Errorf("ID %q: want 32 lowercase hexadecimal digits", base)
	}
}

// TestFindingIDInEveryFormat: json, ndjson, csv and sarif give each
// finding its FindingID, of the origins the analysis names, whatever
// --uuid says.
func TestFindingIDInEveryFormat(t *testing.T) {
	a := incidentAnalysis()
	var want []string
	for _, o := range [][]Origin{nil, AgentOrigins("host-1", "r1", a.Files)} {
		a.Origins = o
		want = want[:0]
		distinct := map[string]bool{}
		for i := range a.Result.Findings {
			f := &a.Result.Findings[i]
			org := Origin{File: a.Files[f.At.File]}
			if o != nil {
				org = Origin{"host-1", "r1", a.Files[f.At.File]}
			}
			want = append(want, FindingID(org, f))
			distinct[want[i]] = true
		}
		if len(distinct) != len(want) || len(want) < 5 {
			t.Fatalf("%d findings, %d IDs", len(want), len(distinct))
		}
		for _, form := range []UUIDForm{UUIDKafka, UUIDRFC4122} {
			var doc struct{ Findings []struct{ ID string } }
			if err := json.Unmarshal(render(t, a, AnalysisOptions{Format: "json", UUID: form}), &doc); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range doc.Findings {
				got = append(got, f.ID)
			}
			check(t, "json", form, got, want)

			got = nil
			for _, l := range strings.Split(string(render(t, a, AnalysisOptions{Format: "ndjson", UUID: form})), "\n") {
				var f struct{ Kind, ID string }
				if strings.HasPrefix(l, `{"kind":"finding"`) {
					if err := json.Unmarshal([]byte(l), &f); err != nil {
						t.Fatal(err)
					}
					got = append(got, f.ID)
				}
			}
			check(t, "ndjson", form, got, want)

			recs, err := csv.NewReader(bytes.NewReader(render(t, a, AnalysisOptions{Format: "csv", UUID: form}))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if last := recs[0][len(recs[0])-1]; last != "id" {
				t.Fatalf("the last csv column is %q, want id", last)
			}
			got = nil
			for _, r := range recs[1:] {
				if r[len(r)-1] != "" {
					got = append(got, r[len(r)-1])
				}
			}
			check(t, "csv", form, got, want)

			var log struct {
				Runs []struct {
					Results []struct{ Properties struct{ ID string } }
				}
			}
			if err := json.Unmarshal(render(t, a, AnalysisOptions{Format: "sarif", UUID: form}), &log); err != nil {
				t.Fatal(err)
			}
			got = nil
			for _, r := range log.Runs[0].Results {
				got = append(got, r.Properties.ID)
			}
			check(t, "sarif", form, got, want)
		}
	}
}

func check(t *testing.T, format string, form UUIDForm, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("-o %s --uuid %d: ids\n%v\nwant\n%v", format, form, got, want)
	}
}
