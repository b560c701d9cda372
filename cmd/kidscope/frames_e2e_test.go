package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kidscope/kidscope/report"
)

// framesCapture is a real client's capture the frames tests read: seven
// connections to three brokers, Produce among other APIs.
const framesCapture = "../../testdata/real/kgo-producer-kfake.pcap"

func framesPorts(t *testing.T) string {
	t.Helper()
	return strings.Join(capturePorts(t, strings.TrimSuffix(framesCapture, ".pcap")+".meta.json"), ",")
}

// fieldLines runs frames with args and splits its stdout into lines of
// tab-separated fields.
func fieldLines(t *testing.T, args ...string) ([][]string, string) {
	t.Helper()
	out, stderr, code := runKidscope(t, append([]string{"frames"}, args...)...)
	if code != 0 {
		t.Fatalf("frames %q: exit %d: %s", args, code, stderr)
	}
	var lines [][]string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l != "" {
			lines = append(lines, strings.Split(l, "\t"))
		}
	}
	return lines, stderr
}

// TestFramesFieldsE2E: -e, -E, -o tsv, --api and --connection of the
// built binary on a real capture.
func TestFramesFieldsE2E(t *testing.T) {
	ports := framesPorts(t)
	all, _ := fieldLines(t, "-o", "tsv", "-p", ports, framesCapture)
	if len(all) < 2 || strings.Join(all[0], ",") != strings.Join(append(append([]string(nil), frameRecordFields...),
		"error_codes", "time", "connection_id", "request_frame", "response_frame", "latency"), ",") {
		t.Fatalf("tsv header %q", all[0])
	}
	col := map[string]int{}
	for i, n := range all[0] {
		col[n] = i
	}
	rows := all[1:]
	for _, r := range rows {
		if len(r) != len(all[0]) {
			t.Fatalf("tsv row of %d fields, the header %d: %q", len(r), len(all[0]), r)
		}
	}

	t.Run("-e", func(t *testing.T) {
		// Repeated and comma lists, in the order given, no header.
		lines, stderr := fieldLines(t, "-p", ports, "-e", "frame", "-e", "api_name,latency", framesCapture)
		if len(lines) != len(rows) {
			t.Fatalf("%d lines, want %d", len(lines), len(rows))
		}
		for i, l := range lines {
			want := []string{rows[i][col["frame"]], rows[i][col["api_name"]], rows[i][col["latency"]]}
			if !slices.Equal(l, want) {
				t.Errorf("line %d %q, want %q", i, l, want)
			}
		}
		if !strings.Contains(stderr, "29 requests, 29 responses") {
			t.Errorf("summary on stderr %q", stderr)
		}
	})

	t.Run("-E", func(t *testing.T) {
		out, _, code := runKidscope(t, "frames", "-p", ports, "-e", "frame,client_id", "-E", "header=y,separator=/s", "-E", "quote=d", framesCapture)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if code != 0 || len(lines) != len(rows)+1 || lines[0] != `"frame" "client_id"` ||
			lines[1] != `"`+rows[0][col["frame"]]+`" "`+rows[0][col["client_id"]]+`"` {
			t.Errorf("exit %d, lines %q…", code, lines[:min(3, len(lines))])
		}
	})

	t.Run("--api", func(t *testing.T) {
		want := 0
		for _, r := range rows {
			if r[col["api_name"]] == "Produce" {
				want++
			}
		}
		for _, api := range []string{"Produce", "produce", "0"} {
			lines, stderr := fieldLines(t, "-p", ports, "-e", "api_name,api_key", "--api", api, framesCapture)
			if len(lines) != want || want == 0 {
				t.Errorf("--api %s: %d lines, want %d", api, len(lines), want)
			}
			for _, l := range lines {
				if l[0] != "Produce" || l[1] != "0" {
					t.Errorf("--api %s lists %q", api, l)
				}
			}
			if !strings.Contains(stderr, "of 58 messages listed (API Produce)") || !strings.Contains(stderr, "29 requests, 29 responses") {
				t.Errorf("--api %s: summary %q", api, stderr)
			}
		}
		lines, _ := fieldLines(t, "-p", ports, "-e", "api_name", "--api", "Produce,ApiVersions", "--api", "71", framesCapture)
		names := map[string]bool{}
		for _, l := range lines {
			names[l[0]] = true
		}
		if len(names) != 3 || !names["GetTelemetrySubscriptions"] || !names["ApiVersions"] {
			t.Errorf("--api Produce,ApiVersions --api 71 lists %v", names)
		}
	})

	t.Run("--connection", func(t *testing.T) {
		// Connection 3 is the one analyze numbers 3.
		out, stderr, _ := runKidscope(t, "analyze", "-o", "json", "-p", ports, framesCapture)
		var doc struct {
			Connections []struct {
				ID     int    `json:"id"`
				Client string `json:"client"`
				Broker string `json:"broker"`
			} `json:"connections"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("analyze json: %v: %s", err, stderr)
		}
		var client, broker string
		for _, c := range doc.Connections {
			if c.ID == 3 {
				client, broker = c.Client, c.Broker
			}
		}
		if client == "" {
			t.Fatalf("analyze has no connection 3: %s", out)
		}
		lines, stderr := fieldLines(t, "-p", ports, "-e", "connection_id,client,broker", "--connection", "3", framesCapture)
		if len(lines) == 0 {
			t.Fatal("--connection 3 lists nothing")
		}
		for _, l := range lines {
			if !slices.Equal(l, []string{"3", client, broker}) {
				t.Errorf("--connection 3 lists %q, want 3 %s %s", l, client, broker)
			}
		}
		n := 0
		for _, r := range rows {
			if r[col["connection_id"]] == "3" {
				n++
			}
		}
		if n != len(lines) || !strings.Contains(stderr, "messages listed (connection 3)") {
			t.Errorf("%d lines, the tsv has %d of connection 3; stderr %q", len(lines), n, stderr)
		}
	})

	t.Run("usage errors", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			says string
		}{
			{[]string{"-e", "frame,nope"}, "unknown field \"nope\": the fields are " + strings.Join(report.FrameFieldNames(), ", ")},
			{[]string{"-E", "quote=x", "-e", "frame"}, "want d, s or n"},
			{[]string{"--api", "Nope"}, "no Kafka API has that name"},
			{[]string{"--connection", "0"}, "want a connection number"},
			{[]string{"-o", "table", "-e", "frame"}, "the table has its own columns"},
			{[]string{"-o", "json", "-E", "header=y"}, "-E shapes csv, tsv and fields"},
		} {
			out, stderr, code := runKidscope(t, append(append([]string{"frames", "-p", ports}, c.args...), framesCapture)...)
			if code != 2 || out != "" || !strings.Contains(stderr, c.says) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, stderr, c.says)
			}
		}
	})
}

// TestFramesLinksAgreeWithTshark: every link tshark's Kafka dissector
// makes from a response to its request (kafka.request_frame) kidscope
// makes too, on real clients' captures; and kidscope's two sides agree:
// each request's response_frame is the response whose request_frame it is.
// (tshark 4.0 leaves kafka.response_frame empty, and some responses
// unlinked: it is not asked to link all that kidscope links.)
func TestFramesLinksAgreeWithTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("no tshark")
	}
	for _, name := range []string{"kgo-producer-kfake", "rdkafka-consumer-classic-mock", "kafkajs-admin-kfake"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("../../testdata/real", name+".pcap")
			ports := capturePorts(t, filepath.Join("../../testdata/real", name+".meta.json"))
			lines, _ := fieldLines(t, "-p", strings.Join(ports, ","), "-e", "frame,direction,request_frame,response_frame", file)
			fromReq, fromResp := map[string]bool{}, map[string]bool{}
			responses := 0
			for _, l := range lines {
				switch {
				case l[1] == "request" && l[3] != "":
					fromReq[l[0]+"→"+l[3]] = true
				case l[1] == "response":
					responses++
					if l[2] != "" {
						fromResp[l[2]+"→"+l[0]] = true
					}
				}
			}
			for k := range fromReq {
				if !fromResp[k] {
					t.Errorf("request and response %s: the response does not name the request", k)
				}
			}
			for k := range fromResp {
				if !fromReq[k] {
					t.Errorf("request and response %s: the request does not name the response", k)
				}
			}
			if len(fromResp) != responses {
				t.Errorf("%d of %d responses linked to their request", len(fromResp), responses)
			}
			args := []string{"-r", file, "-o", "tcp.reassemble_out_of_order:TRUE"}
			for _, p := range ports {
				args = append(args, "-d", "tcp.port=="+p+",kafka")
			}
			args = append(args, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
				"-e", "frame.number", "-e", "kafka.request_frame", "-Y", "kafka")
			out, err := exec.Command("tshark", args...).Output()
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			theirs := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := append(strings.Split(l, "\t"), "", "")
				for _, rq := range split(f[1]) {
					theirs[rq+"→"+f[0]] = true
				}
			}
			if len(theirs) == 0 {
				t.Fatal("tshark links no response to its request")
			}
			for k := range theirs {
				if !fromResp[k] {
					t.Errorf("tshark links %s; kidscope does not", k)
				}
			}
			t.Logf("%d links, tshark makes %d of them", len(fromResp), len(theirs))
		})
	}
}

// TestFramesTableWidth: the table of every committed capture (the samples
// and the real clients') fits 120 columns, and names its file once, above
// its rows.
func TestFramesTableWidth(t *testing.T) {
	for _, file := range committedCaptures(t) {
		out, stderr, code := runKidscope(t, "frames", "-p", mutationPorts(), file)
		if code != 0 && code != 2 {
			t.Errorf("%s: exit %d: %s", file, code, stderr)
			continue
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) < 2 {
			continue // no message: the summary alone
		}
		if lines[0] != file || !strings.HasPrefix(lines[1], "FRAME ") || strings.Count(out, file+"\n") != 1 {
			t.Errorf("%s: the file is not named once above the rows:\n%s", file, strings.Join(lines[:2], "\n"))
		}
		for _, l := range lines[1 : len(lines)-1] { // the summary line is prose
			if n := utf8.RuneCountInString(l); n > 120 {
				t.Errorf("%s: a line of %d columns:\n%s", filepath.Base(file), n, l)
			}
		}
	}
}

// TestFramesTableSeveralFiles: with several inputs, each file is named
// above its rows, once per run of its rows, and the heading is written
// once.
func TestFramesTableSeveralFiles(t *testing.T) {
	a := "../../testdata/real/kgo-producer-kfake.pcap"
	b := "../../testdata/real/kgo-admin-kfake.pcap"
	out, stderr, code := runKidscope(t, "frames", "-p", mutationPorts(), a, b)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var named []string
	for _, l := range strings.Split(out, "\n") {
		if l == a || l == b {
			named = append(named, l)
		}
	}
	if len(named) < 2 || named[0] != a && named[0] != b || strings.Count(out, "\nFRAME ") != 1 {
		t.Fatalf("file lines %q, %d headings:\n%s", named, strings.Count(out, "\nFRAME "), out)
	}
	for i := 1; i < len(named); i++ {
		if named[i] == named[i-1] {
			t.Errorf("%s named twice in a row", named[i])
		}
	}
}
