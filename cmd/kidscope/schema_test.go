package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kidscope/kidscope/internal/schemacheck"
)

// analysisSchemas compiles docs/schema/analysis.schema.json: the document,
// and one ndjson line.
func analysisSchemas(t *testing.T) (doc, line *jsonschema.Schema) {
	t.Helper()
	doc, line, err := schemacheck.Analysis("../../docs/schema/analysis.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return doc, line
}

func validOutput(t *testing.T, doc, line *jsonschema.Schema, what, out string, ndjson bool) {
	t.Helper()
	check := func(s *jsonschema.Schema, where, text string) {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
	if !ndjson {
		check(doc, what, out)
		return
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		check(line, what+" line "+strconv.Itoa(n), sc.Text())
	}
}

// TestAnalyzeSchemaReal: analyze's json and ndjson of every bundled sample
// (as `kidscope samples` writes them) and of every real client's capture
// are valid by the JSON Schema.
func TestAnalyzeSchemaReal(t *testing.T) {
	doc, line := analysisSchemas(t)
	needSamplesCommand(t)
	dir := t.TempDir()
	if _, stderr, code := runKidscope(t, "samples", dir); code != 0 {
		t.Fatalf("kidscope samples: exit %d: %s", code, stderr)
	}
	type input struct {
		path  string
		ports []int
	}
	var inputs []input
	exps, _ := filepath.Glob(filepath.Join(dir, "*.expect.json"))
	reals, _ := filepath.Glob("../../testdata/real/*.meta.json")
	if len(exps) < 40 || len(reals) < 10 {
		t.Fatalf("%d samples, %d real captures", len(exps), len(reals))
	}
	for _, p := range append(exps, reals...) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			File  string `json:"file"`
			Ports []int  `json:"ports"`
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		capture := filepath.Join(filepath.Dir(p), meta.File)
		if meta.File == "" {
			capture = strings.TrimSuffix(p, ".meta.json") + ".pcap"
		}
		inputs = append(inputs, input{capture, meta.Ports})
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in.path), func(t *testing.T) {
			t.Parallel()
			var ports []string
			for _, p := range in.ports {
				ports = append(ports, strconv.Itoa(p))
			}
			for _, f := range []string{"json", "ndjson"} {
				out, stderr, code := runKidscope(t, "analyze", "-o", f, "-p", strings.Join(ports, ","), "--fail-on", "never", in.path)
				if code != 0 {
					t.Fatalf("-o %s: exit %d: %s", f, code, stderr)
				}
				validOutput(t, doc, line, f, out, f == "ndjson")
			}
		})
	}
}

// TestAnalyzeRunInfo: the document says kidscope's version, the options
// as given and each input's size and SHA-256, a file's and stdin's alike;
// an input that can be read only once is not hashed, and says why.
func TestAnalyzeRunInfo(t *testing.T) {
	path := "../../testdata/real/kafkajs-admin-kfake.pcap"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	version, _, _ := runKidscope(t, "--version")

	type doc struct {
		SchemaVersion   int    `json:"schema_version"`
		KidscopeVersion string `json:"kidscope_version"`
		Options         struct {
			Ports       []string `json:"ports"`
			Profile     string   `json:"profile"`
			HeaderV3    []string `json:"header_v3"`
			Rules       []string `json:"rules"`
			SkipRules   []string `json:"skip_rules"`
			MinSeverity string   `json:"min_severity"`
			Filter      *string  `json:"filter"`
			UUID        string   `json:"uuid"`
		} `json:"options"`
		Inputs []struct {
			Kind     string  `json:"kind"`
			Name     string  `json:"name"`
			Size     *int64  `json:"size"`
			SHA256   *string `json:"sha256"`
			Unhashed *string `json:"unhashed"`
		} `json:"inputs"`
	}
	args := []string{"analyze", "-o", "json", "-p", "9092,19092-19094", "--profile", "seed", "--header-v3", "3:13",
		"--rule", "header-*", "--skip-rule", "header-id-repeated", "--min-severity", "warning", "-f", "tcp port 9092",
		"--uuid", "rfc4122", "--fail-on", "never"}
	out, stderr, code := runKidscope(t, append(args, path)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var d doc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.SchemaVersion != 2 || d.KidscopeVersion == "" || !strings.Contains(version, d.KidscopeVersion) {
		t.Errorf("schema_version %d, kidscope_version %q (--version says %q)", d.SchemaVersion, d.KidscopeVersion, version)
	}
	o := d.Options
	if strings.Join(o.Ports, " ") != "9092 19092-19094" || o.Profile != "seed" || strings.Join(o.HeaderV3, " ") != "3:13" ||
		strings.Join(o.Rules, " ") != "header-*" || strings.Join(o.SkipRules, " ") != "header-id-repeated" ||
		o.MinSeverity != "warning" || o.Filter == nil || *o.Filter != "tcp port 9092" || o.UUID != "rfc4122" {
		t.Errorf("options %+v", o)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Kind != "file" || d.Inputs[0].Name != path || d.Inputs[0].SHA256 == nil ||
		*d.Inputs[0].SHA256 != want || d.Inputs[0].Size == nil || *d.Inputs[0].Size != int64(len(data)) || d.Inputs[0].Unhashed != nil {
		t.Errorf("inputs %s", out[strings.Index(out, `"inputs"`):strings.Index(out, `"summary"`)])
	}

	// stdin: hashed as it is read.
	cmd := exec.Command(binary, "analyze", "-o", "ndjson", "-")
	cmd.Stdin = bytes.NewReader(data)
	nd, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(nd), "\n")
	var run doc
	if err := json.Unmarshal([]byte(first), &run); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, `{"kind":"run",`) || len(run.Inputs) != 1 || run.Inputs[0].Kind != "stdin" ||
		run.Inputs[0].SHA256 == nil || *run.Inputs[0].SHA256 != want || *run.Inputs[0].Size != int64(len(data)) {
		t.Errorf("stdin run line %s", first)
	}

	// --no-hash: named, not hashed.
	out, _, _ = runKidscope(t, "analyze", "-o", "json", "--no-hash", path)
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if in := d.Inputs[0]; in.SHA256 != nil || in.Unhashed == nil || *in.Unhashed != "--no-hash" || in.Name != path {
		t.Errorf("--no-hash input %+v", in)
	}

	// A FIFO is read once, by the analysis.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := exec.Command("mkfifo", fifo).Run(); err != nil {
		t.Skip("mkfifo:", err)
	}
	go func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Write(data)
			f.Close()
		}
	}()
	out, stderr, code = runKidscope(t, "analyze", "-o", "json", fifo)
	if code != 0 {
		t.Fatalf("fifo: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if in := d.Inputs[0]; in.SHA256 != nil || in.Size != nil || in.Unhashed == nil || !strings.Contains(*in.Unhashed, "not a regular file") {
		t.Errorf("fifo input %+v", in)
	}
	if !strings.Contains(out, `"packets": 89`) {
		t.Error("the FIFO's packets were not all analysed: hashing took some")
	}
}

// TestLiveJSONSchema: live -o json writes the same document, its input
// the interface.
func TestLiveJSONSchema(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live needs root")
	}
	doc, line := analysisSchemas(t)
	out, stderr, code := runKidscope(t, "live", "-i", "lo", "-o", "json", "--duration", "500ms", "--no-status", "-Z", "root")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	validOutput(t, doc, line, "live -o json", out, false)
	if !strings.Contains(out, `"kind": "interface"`) || !strings.Contains(out, `"snaplen": 262144`) {
		t.Errorf("live -o json: no interface input or snaplen:\n%s", out[:min(len(out), 2000)])
	}
}
