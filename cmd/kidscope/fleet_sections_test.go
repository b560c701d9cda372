package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// sectionCaptures are bundled captures with no connection in common (no
// client and broker endpoints alike), so that each one's agent sees
// connections of its own, as agents on distinct hosts would, and between
// them every section has something to show: verdicts of every kind, old
// and new clients, gaps, TLS, acks = 0, a capture that missed a start,
// findings of rules across connections.
var sectionCaptures = []string{"broker-mixed", "vrd-produce-v9", "hdr-seed-late", "grp-join-rejoin-wrong",
	"tel-push-after-terminating", "inst-shared", "stream-lost-segment", "tls-on-kafka-port", "vrd-produce-acks-zero",
	"tel-broker-reissues-id", "stream-mid-start"}

// TestFleetReportEqualsAnalyzeOfTheUnion: an agent per capture
// (analyze --publish), then kidscope fleet --from-beginning --until-end
// -o json: every section of the fleet's report (summary, findings with
// the broker's answers, connections, instances, brokers and their
// verdicts, the matrix, finding counts) equals analyze's over the same
// captures together. What legitimately differs is normalised: the fleet
// names a file agent:file and lists files in the order it read of them;
// it numbers connections in that order too; a connection's tcp.stream is
// its agent's capture's, where analyze numbers the streams of all its
// inputs in one sequence; a broker's evidence frames are in time order,
// not in the order of the inputs.
func TestFleetReportEqualsAnalyzeOfTheUnion(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	var files []string
	for _, name := range sectionCaptures {
		file := filepath.Join("..", "..", "samples", "captures", name+".pcapng")
		files = append(files, file)
		_, stderr, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "--no-progress", "--publish", brokers, "--agent", name, file)
		if code != 0 || strings.Contains(stderr, "dropped") {
			t.Fatalf("agent %s: exit %d: %s", name, code, stderr)
		}
	}
	union, stderr, code := runKidscope(t, append([]string{"analyze", "-o", "json", "--fail-on", "never", "--no-progress"}, files...)...)
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	out, stderr, code := runKidscope(t, "fleet", "--brokers", brokers, "--from-beginning", "--until-end", "-o", "json", "--fail-on", "never")
	if code != 0 {
		t.Fatalf("fleet: exit %d: %s", code, stderr)
	}
	doc, line := analysisSchemas(t)
	validOutput(t, doc, line, "fleet -o json", out, false)

	var fleetDoc struct {
		Fleet struct {
			Runs     int `json:"runs"`
			Reported int `json:"reported_runs"`
			Missing  int `json:"report_rows_missing"`
		} `json:"fleet"`
	}
	if err := json.Unmarshal([]byte(out), &fleetDoc); err != nil {
		t.Fatal(err)
	}
	if f := fleetDoc.Fleet; f.Runs != len(sectionCaptures) || f.Reported != f.Runs || f.Missing != 0 {
		t.Errorf("the fleet read the reports of %d of %d runs (%d rows missing), want all %d", f.Reported, f.Runs, f.Missing, len(sectionCaptures))
	}
	want, got := sections(t, union, normal{}), sections(t, out, normal{agentFiles: true})
	sameSections(t, got, want)
	if n := len(want["findings"].([]any)); n < 10 {
		t.Errorf("%d findings: the captures show too little", n)
	}
	for _, s := range []string{"connections", "instances", "brokers"} {
		if len(want[s].([]any)) < 3 {
			t.Errorf("%d %s: the captures show too little", len(want[s].([]any)), s)
		}
	}
}

// sameSections compares the fleet's sections with analyze's.
func sameSections(t *testing.T, got, want map[string]any) {
	t.Helper()
	for _, s := range []string{"summary", "findings", "connections", "instances", "brokers", "matrix", "finding_counts"} {
		if !reflect.DeepEqual(got[s], want[s]) {
			g, _ := json.MarshalIndent(got[s], "", " ")
			w, _ := json.MarshalIndent(want[s], "", " ")
			t.Errorf("%s: the fleet's\n%s\nanalyze's\n%s", s, g, w)
		}
	}
}

// normal says how a report is normalised for comparison.
type normal struct {
	// agentFiles: the fleet's report, which names files agent:file.
	agentFiles bool
	// frameless: the files and frame numbers are left out, for a union
	// that renumbers the frames (mergecap); connections are named by
	// their endpoints and first time.
	frameless bool
}

// sections are a JSON report's sections, normalised: file names without
// the agent, connections named by their endpoints and first frame rather
// than numbered, tcp.stream and the findings' ids left out, lists in one
// order.
func sections(t *testing.T, out string, n normal) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %.2000s", err, out)
	}
	file := func(v any) any {
		s, ok := v.(string)
		if !ok || !n.agentFiles {
			return v
		}
		_, f, found := strings.Cut(s, ":")
		if !found {
			t.Errorf("fleet file %q is not agent:file", s)
		}
		return f
	}
	// The connections' names, by their number.
	names := map[float64]string{}
	for _, c := range doc["connections"].([]any) {
		c := c.(map[string]any)
		first := c["first"].(map[string]any)
		names[c["id"].(float64)] = fmt.Sprintf("%s→%s from %v:%v", c["client"], c["broker"], file(first["file"]), first["frame"])
		if n.frameless {
			names[c["id"].(float64)] = fmt.Sprintf("%s→%s from %v", c["client"], c["broker"], first["time"])
		}
	}
	conn := func(v any) any {
		n, ok := names[v.(float64)]
		if !ok {
			t.Errorf("connection %v is not in the connections table", v)
		}
		return n
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				switch {
				case n.frameless && (k == "file" || k == "files" || strings.HasSuffix(k, "frame") || strings.HasSuffix(k, "frames")):
					delete(v, k)
					continue
				}
				switch k {
				case "file":
					v[k] = file(x)
				case "files":
					var fs []string
					for _, f := range x.([]any) {
						fs = append(fs, file(f).(string))
					}
					slices.Sort(fs)
					v[k] = fs
				case "connection_id":
					v[k] = conn(x)
				default:
					v[k] = walk(x)
				}
			}
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		}
		return v
	}
	list := func(name string, key func(m map[string]any) string) []any {
		l := doc[name].([]any)
		slices.SortStableFunc(l, func(a, b any) int { return cmp.Compare(key(a.(map[string]any)), key(b.(map[string]any))) })
		return l
	}
	for _, c := range doc["connections"].([]any) {
		c := c.(map[string]any)
		c["id"] = conn(c["id"])
		delete(c, "tcp_stream")
	}
	// A finding's id in the fleet's report is of its agent and run, which
	// analyze has not (TestFleetRepeatHasItsID compares the fleet's ids
	// with the agents').
	for _, f := range doc["findings"].([]any) {
		delete(f.(map[string]any), "id")
	}
	for _, in := range doc["instances"].([]any) {
		in := in.(map[string]any)
		var cs []string
		for _, c := range in["connections"].([]any) {
			cs = append(cs, conn(c).(string))
		}
		slices.Sort(cs)
		in["connections"] = cs
	}
	walk(doc)
	for _, b := range doc["brokers"].([]any) {
		b := b.(map[string]any)
		ev := b["evidence"].([]any)
		slices.SortFunc(ev, func(x, y any) int { return cmp.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
		for _, k := range []string{"evidence_frames", "enforce_frames", "ignore_frames"} {
			if l, ok := b[k].([]any); ok {
				slices.SortFunc(l, func(x, y any) int { return cmp.Compare(x.(float64), y.(float64)) })
			}
		}
	}
	str := func(m map[string]any) string { b, _ := json.Marshal(m); return string(b) }
	return map[string]any{
		"summary":        doc["summary"],
		"findings":       list("findings", func(m map[string]any) string { return fmt.Sprint(m["time"], m["file"], m["frame"], m["rule"], str(m)) }),
		"connections":    list("connections", func(m map[string]any) string { return m["id"].(string) }),
		"instances":      list("instances", func(m map[string]any) string { return m["instance_id"].(string) }),
		"brokers":        list("brokers", func(m map[string]any) string { return m["broker"].(string) }),
		"matrix":         doc["matrix"],
		"finding_counts": list("finding_counts", func(m map[string]any) string { return str(m) }),
	}
}
