package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// indentJSON must agree with json.Indent on every document encoding/json
// writes: the golden JSON outputs (compacted again) and the fuzzer's.
// indented is indentJSON's output as a slice.
func indented(t testing.TB, src []byte) []byte {
	var out bytes.Buffer
	w := bufio.NewWriterSize(&out, 16) // small: the writes cross its buffer's end
	if err := indentJSON(w, src); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestIndentJSONAsEncodingJSON(t *testing.T) {
	docs := []string{`{}`, `[]`, `{"a":[]}`, `{"a":{},"b":[1,2,{"c":"x\"y\\z"}],"d":null}`, `"s"`, `[[],[[]],{"":""}]`, `{"a":"]},:{[\\"}`}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			docs = append(docs, string(line))
		}
		docs = append(docs, string(b))
	}
	checked := 0
	for _, d := range docs {
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(d)) != nil {
			continue
		}
		checked++
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indented(t, compact.Bytes()); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("indent of %.80q:\n got %.200q\nwant %.200q", compact.String(), got, want.Bytes())
		}
	}
	if checked < 20 {
		t.Errorf("only %d documents checked: the golden files are missing", checked)
	}
}

func FuzzIndentJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"c\\\"]"}],"d":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var compact bytes.Buffer
		if json.Compact(&compact, b) != nil {
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			return
		}
		if got := indented(t, compact.Bytes()); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("indent of %q:\n got %q\nwant %q", compact.Bytes(), got, want.Bytes())
		}
	})
}
