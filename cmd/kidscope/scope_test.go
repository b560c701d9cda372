package main

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kidscope/kidscope/kafka"
)

var updateScope = flag.Bool("update-scope", false, "rewrite cmd/kidscope/testdata/scope's golden files")

func TestParseTimeBound(t *testing.T) {
	for _, c := range []struct {
		in   string
		at   time.Time
		off  time.Duration
		rel  bool
		fail bool
	}{
		{in: "+30s", off: 30 * time.Second, rel: true},
		{in: "+1m30.5s", off: 90500 * time.Millisecond, rel: true},
		{in: "+0s", rel: true},
		{in: "2026-05-01T10:00:00Z", at: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)},
		{in: "2026-05-01T12:00:00.25+02:00", at: time.Date(2026, 5, 1, 10, 0, 0, 250e6, time.UTC)},
		{in: "1714557600", at: time.Unix(1714557600, 0)},
		{in: "1714557600.5", at: time.Unix(1714557600, 5e8)},
		{in: "1714557600.000000001", at: time.Unix(1714557600, 1)},
		{in: "+-3s", fail: true},
		{in: "+30", fail: true},
		{in: "30s", fail: true},
		{in: "2026-05-01 10:00:00", fail: true},
		{in: "1714557600.", fail: true},
		{in: "1714557600.1234567890", fail: true},
		{in: "yesterday", fail: true},
		{in: "", fail: true},
	} {
		at, off, rel, err := parseTimeBound(c.in)
		if c.fail {
			if err == nil {
				t.Errorf("%q: no error", c.in)
			}
			continue
		}
		if err != nil || !at.Equal(c.at) || off != c.off || rel != c.rel {
			t.Errorf("%q: %v %v %v %v, want %v %v %v", c.in, at, off, rel, err, c.at, c.off, c.rel)
		}
	}
}

func TestTimeRangeFlags(t *testing.T) {
	for _, c := range []struct {
		from, to string
		fail     bool
	}{
		{from: "+1s", to: "+2s"},
		{from: "+2s", to: "+1s", fail: true},
		{from: "+1s", to: "+1s", fail: true},
		{from: "2026-05-01T10:00:00Z", to: "2026-05-01T09:00:00Z", fail: true},
		{from: "+1s", to: "2026-05-01T09:00:00Z"}, // mixed: known only once the first packet is read
		{from: "+1s"},
		{to: "1714557600"},
		{from: "nope", fail: true},
	} {
		f := scopeFlags{from: c.from, to: c.to}
		r, err := f.timeRange()
		if (err != nil) != c.fail {
			t.Errorf("--from %q --to %q: error %v, want failure %v", c.from, c.to, err, c.fail)
		}
		if err == nil && r.HasFrom != (c.from != "") || r.HasTo != (c.to != "") && err == nil {
			t.Errorf("--from %q --to %q: bounds %v %v", c.from, c.to, r.HasFrom, r.HasTo)
		}
	}
}

func TestScopeFlagsParse(t *testing.T) {
	one := kafka.UUID{15: 1}
	for _, c := range []struct {
		f       scopeFlags
		ids     []kafka.UUID
		clients []string
		brokers []string
		err     string
	}{
		{f: scopeFlags{instances: []string{"AAAAAAAAAAAAAAAAAAAAAQ"}}, ids: []kafka.UUID{one}},
		{f: scopeFlags{instances: []string{"00000000-0000-0000-0000-000000000001"}}, ids: []kafka.UUID{one}},
		{f: scopeFlags{instances: []string{"AAAAAAAAAAAAAAAAAAAAAQ,00000000000000000000000000000000"}}, ids: []kafka.UUID{one, {}}},
		{f: scopeFlags{instances: []string{"AAAA"}}, err: "Kafka's base64 form"},
		{f: scopeFlags{instances: []string{"zz000000-0000-0000-0000-000000000001"}}, err: "RFC 4122"},
		{f: scopeFlags{clients: []string{"10.0.0.1", "10.0.0.2:5000", "[::1]:9092", "::2"}}, clients: []string{"10.0.0.1", "10.0.0.2:5000", "[::1]:9092", "::2"}},
		{f: scopeFlags{clients: []string{"[::ffff:10.0.0.1]:7"}}, clients: []string{"10.0.0.1:7"}},
		{f: scopeFlags{brokers: []string{"10.0.0.9:9092,10.0.0.8"}}, brokers: []string{"10.0.0.9:9092", "10.0.0.8"}},
		{f: scopeFlags{brokers: []string{"kafka:9092"}}, err: "--broker \"kafka:9092\": want an IP address"},
		{f: scopeFlags{clients: []string{"10.0.0.1:0"}}, err: "port 0"},
		{f: scopeFlags{clients: []string{"10.0.0.1:99999"}}, err: "want an IP address"},
	} {
		s, err := c.f.scope(nil)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c.f, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", c.f, err)
			continue
		}
		if !slices.Equal(s.Instances, c.ids) {
			t.Errorf("%+v: instances %v, want %v", c.f, s.Instances, c.ids)
		}
		var cl, br []string
		for _, a := range s.Clients {
			cl = append(cl, a.String())
		}
		for _, a := range s.Brokers {
			br = append(br, a.String())
		}
		if !slices.Equal(cl, c.clients) || !slices.Equal(br, c.brokers) {
			t.Errorf("%+v: clients %v brokers %v, want %v %v", c.f, cl, br, c.clients, c.brokers)
		}
	}
}

// scopeDoc is the part of analyze's JSON the scope tests read.
type scopeDoc struct {
	Summary struct {
		Scope *struct {
			Flags            string
			Findings         int `json:"findings"`
			FindingsTotal    int `json:"findings_total"`
			Connections      int `json:"connections"`
			ConnectionsTotal int `json:"connections_total"`
		} `json:"scope"`
	} `json:"summary"`
	Findings []struct {
		Rule         string `json:"rule"`
		ConnectionID int    `json:"connection_id"`
		Frame        int64  `json:"frame"`
	} `json:"findings"`
	Connections []struct {
		ID         int    `json:"id"`
		Client     string `json:"client"`
		Broker     string `json:"broker"`
		InstanceID string `json:"instance_id"`
	} `json:"connections"`
	Instances []struct {
		ID          string `json:"instance_id"`
		Connections []int  `json:"connections"`
	} `json:"instances"`
	Brokers []struct {
		Endpoint string `json:"endpoint"`
	} `json:"brokers"`
}

func analyzeJSON(t *testing.T, args ...string) scopeDoc {
	t.Helper()
	out, stderr, code := runKidscope(t, append([]string{"analyze", "-o", "json", "--fail-on", "never"}, args...)...)
	if code != 0 {
		t.Fatalf("analyze %v: exit %d: %s", args, code, stderr)
	}
	var d scopeDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("analyze %v: %v", args, err)
	}
	return d
}

func scopeSamples(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, stderr, code := runKidscope(t, "samples", dir); code != 0 {
		t.Fatalf("samples: %s", stderr)
	}
	return dir
}

// TestScopeNarrowsReport: each scope flag keeps, of the whole report, the
// findings and connections it names, and says so in the summary.
func TestScopeNarrowsReport(t *testing.T) {
	file := filepath.Join(scopeSamples(t), "profile-auto-mix.pcapng")
	all := analyzeJSON(t, file)
	if all.Summary.Scope != nil || len(all.Findings) < 3 || len(all.Connections) < 6 {
		t.Fatalf("the whole report: scope %v, %d findings, %d connections", all.Summary.Scope, len(all.Findings), len(all.Connections))
	}
	conn := all.Connections[3] // audit-app: a header-id-dropped finding
	for _, c := range []struct {
		args []string
		in   func(id int, client, broker, instance string) bool
	}{
		{[]string{"--connection", "4"}, func(id int, _, _, _ string) bool { return id == 4 }},
		{[]string{"--connection", "4,5"}, func(id int, _, _, _ string) bool { return id == 4 || id == 5 }},
		{[]string{"--client", strings.Split(conn.Client, ":")[0]}, func(_ int, cl, _, _ string) bool { return cl == conn.Client }},
		{[]string{"--client", conn.Client}, func(_ int, cl, _, _ string) bool { return cl == conn.Client }},
		{[]string{"--client", "10.9.9.9"}, func(int, string, string, string) bool { return false }},
		{[]string{"--broker", conn.Broker}, func(_ int, _, br, _ string) bool { return br == conn.Broker }},
		{[]string{"--broker", conn.Broker, "--connection", "5"}, func(id int, _, _, _ string) bool { return id == 5 }},
		{[]string{"--instance", conn.InstanceID}, func(_ int, _, _, in string) bool { return in == conn.InstanceID }},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			d := analyzeJSON(t, append(c.args, file)...)
			s := d.Summary.Scope
			if s == nil || s.FindingsTotal != len(all.Findings) || s.ConnectionsTotal != len(all.Connections) ||
				s.Findings != len(d.Findings) || s.Connections != len(d.Connections) {
				t.Fatalf("summary scope %+v, want totals %d %d", s, len(all.Findings), len(all.Connections))
			}
			info := map[int][3]string{}
			var want []int
			for _, r := range all.Connections {
				info[r.ID] = [3]string{r.Client, r.Broker, r.InstanceID}
				if c.in(r.ID, r.Client, r.Broker, r.InstanceID) {
					want = append(want, r.ID)
				}
			}
			var got []int
			for _, r := range d.Connections {
				got = append(got, r.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("connections %v, want %v", got, want)
			}
			var wantF, gotF []string
			for _, f := range all.Findings {
				if slices.Contains(want, f.ConnectionID) {
					wantF = append(wantF, f.Rule+"@"+strconv.Itoa(f.ConnectionID))
				}
			}
			for _, f := range d.Findings {
				gotF = append(gotF, f.Rule+"@"+strconv.Itoa(f.ConnectionID))
			}
			if !slices.Equal(gotF, wantF) {
				t.Errorf("findings %v, want %v", gotF, wantF)
			}
			for _, in := range d.Instances {
				if !slices.ContainsFunc(in.Connections, func(id int) bool { return slices.Contains(want, id) }) {
					t.Errorf("instance %s on connections %v, none in the scope", in.ID, in.Connections)
				}
			}
			if len(want) > 0 && len(d.Brokers) == 0 {
				t.Errorf("no brokers listed for connections %v", want)
			}
			if len(want) == 0 && (len(d.Instances) > 0 || len(d.Brokers) > 0) {
				t.Errorf("an empty scope lists instances %v, brokers %v", d.Instances, d.Brokers)
			}
		})
	}
	// The RFC 4122 form selects the same instance.
	var rfc scopeDoc
	out, _, _ := runKidscope(t, "analyze", "-o", "json", "--uuid", "rfc4122", "--fail-on", "never", file)
	if err := json.Unmarshal([]byte(out), &rfc); err != nil {
		t.Fatal(err)
	}
	d := analyzeJSON(t, "--instance", rfc.Connections[3].InstanceID, file)
	if len(d.Connections) != 1 || d.Connections[0].ID != conn.ID {
		t.Errorf("--instance %s (RFC 4122): connections %+v, want %d", rfc.Connections[3].InstanceID, d.Connections, conn.ID)
	}
	// A bad ID is a usage error that names both forms.
	_, stderr, code := runKidscope(t, "analyze", "--instance", "nope", file)
	if code != 2 || !strings.Contains(stderr, "base64") || !strings.Contains(stderr, "RFC 4122") || !strings.Contains(stderr, "Usage:") {
		t.Errorf("bad --instance: exit %d, %q", code, stderr)
	}
}

// TestFramesScope: frames' --client, --broker and --instance keep the
// messages of the connections they name.
func TestFramesScope(t *testing.T) {
	file := filepath.Join(scopeSamples(t), "profile-auto-mix.pcapng")
	all, _ := fieldLines(t, "-e", "connection_id,client,broker,instance_id,direction", file)
	pick := func(keep func(l []string) bool) []string {
		var out []string
		for _, l := range all {
			if keep(l) {
				out = append(out, strings.Join(l, " "))
			}
		}
		return out
	}
	var inst string
	for _, l := range all {
		if l[0] == "4" && l[3] != "" {
			inst = l[3]
			break
		}
	}
	client := pick(func(l []string) bool { return l[0] == "4" })[0]
	for _, c := range []struct {
		args []string
		keep func(l []string) bool
	}{
		{[]string{"--client", strings.Fields(client)[1]}, func(l []string) bool { return l[0] == "4" }},
		{[]string{"--broker", strings.Fields(client)[2]}, func([]string) bool { return true }},
		{[]string{"--broker", "10.9.9.9"}, func([]string) bool { return false }},
		{[]string{"--instance", inst}, func(l []string) bool { return l[0] == "4" }},
	} {
		got, _ := fieldLines(t, append([]string{"-e", "connection_id,client,broker,instance_id,direction"}, append(c.args, file)...)...)
		var g []string
		for _, l := range got {
			g = append(g, strings.Join(l, " "))
		}
		if want := pick(c.keep); !slices.Equal(g, want) || len(want) == 0 && c.args[1] != "10.9.9.9" {
			t.Errorf("frames %v: %d lines, want %d", c.args, len(g), len(want))
		}
	}
}

// TestTimeRangeAgreesWithEditcap: --from/--to read what editcap -A/-B
// leave of a file: the same messages and findings.
func TestTimeRangeAgreesWithEditcap(t *testing.T) {
	if _, err := exec.LookPath("editcap"); err != nil {
		t.Skip("no editcap")
	}
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("no tshark")
	}
	files, _ := filepath.Glob("../../testdata/real/*.pcap")
	if len(files) == 0 {
		t.Fatal("no real captures")
	}
	for _, file := range files[:min(len(files), 6)] {
		name := strings.TrimSuffix(filepath.Base(file), ".pcap")
		t.Run(name, func(t *testing.T) {
			ports := strings.Join(capturePorts(t, strings.TrimSuffix(file, ".pcap")+".meta.json"), ",")
			out, err := exec.Command("tshark", "-r", file, "-T", "fields", "-e", "frame.time_epoch").Output()
			if err != nil {
				t.Fatal(err)
			}
			times := strings.Fields(string(out))
			// A range from a third to two thirds of the packets, cut at
			// packet times: the bounds' inclusion is tested too.
			from, to := times[len(times)/3], times[2*len(times)/3]
			cut := filepath.Join(t.TempDir(), "cut.pcap")
			if b, err := exec.Command("editcap", "-A", from, "-B", to, file, cut).CombinedOutput(); err != nil {
				t.Fatalf("editcap: %v %s", err, b)
			}
			fields := "direction,api_name,api_version,correlation_id,client_id,instance_id,error_code"
			want, _ := fieldLines(t, "-p", ports, "-e", fields, cut)
			got, _ := fieldLines(t, "-p", ports, "-e", fields, "--from", from, "--to", to, file)
			if len(want) == 0 {
				t.Fatalf("the cut file has no messages")
			}
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("frames --from %s --to %s: %d messages, the cut file %d", from, to, len(got), len(want))
			}
			rulesOf := func(d scopeDoc) []string {
				var r []string
				for _, f := range d.Findings {
					r = append(r, f.Rule)
				}
				return r
			}
			a, b := analyzeJSON(t, "-p", ports, cut), analyzeJSON(t, "-p", ports, "--from", from, "--to", to, file)
			if !slices.Equal(rulesOf(a), rulesOf(b)) || len(a.Connections) != len(b.Connections) {
				t.Errorf("analyze: findings %v, connections %d; the cut file: %v, %d", rulesOf(b), len(b.Connections), rulesOf(a), len(a.Connections))
			}
		})
	}
}

// TestConnectionView: analyze --connection N lists the connection's
// messages, as many as frames --connection N, with the findings under
// their frames; the view is golden.
func TestConnectionView(t *testing.T) {
	file := filepath.Join(scopeSamples(t), "profile-auto-mix.pcapng")
	all := analyzeJSON(t, file)
	for _, conn := range []string{"4", "5", "6", "1"} {
		t.Run(conn, func(t *testing.T) {
			out, stderr, code := runKidscope(t, "analyze", "--fail-on", "never", "--connection", conn, file)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			_, view, ok := strings.Cut(out, "\nCONNECTION "+conn+": ")
			if !ok {
				t.Fatalf("no view in:\n%s", out)
			}
			frames, _ := fieldLines(t, "-e", "frame", "--connection", conn, file)
			rows := 0
			lines := strings.Split(view, "\n")
			for i, l := range lines {
				f := strings.Fields(l)
				if len(f) > 3 && f[2] == conn && (f[3] == "→" || f[3] == "←") {
					if f[0] != frames[rows][0] {
						t.Errorf("row %d: frame %s, frames says %s", rows, f[0], frames[rows][0])
					}
					rows++
					// Each finding at this frame follows the row.
					for _, fd := range all.Findings {
						if conn == strconv.Itoa(fd.ConnectionID) && strconv.FormatInt(fd.Frame, 10) == f[0] &&
							(i+1 >= len(lines) || !strings.Contains(lines[i+1], fd.Rule)) {
							t.Errorf("finding %s at frame %d not under its row", fd.Rule, fd.Frame)
						}
					}
				}
			}
			if rows != len(frames) || rows == 0 {
				t.Errorf("the view lists %d messages, frames --connection %s %d", rows, conn, len(frames))
			}
			golden := filepath.Join("testdata", "scope", "connection-"+conn+".txt")
			// The sample's directory is a temporary one.
			got := strings.ReplaceAll("CONNECTION "+conn+": "+view, file, "profile-auto-mix.pcapng")
			if *updateScope {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestConnectionView -update-scope writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the view differs from %s:\n%s", golden, got)
			}
		})
	}
}
