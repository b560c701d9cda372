package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// chromiumPath finds Debian's chromium; without it the browser test is
// skipped, unless CI is set, where it fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed, and CI is set: install it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed: the -o html browser test is skipped")
	return ""
}

// dumpDOM is the DOM a headless Chromium built of the file: what a
// reader's browser shows, not only what kidscope wrote.
func dumpDOM(t *testing.T, chromium, path string) *html.Node {
	t.Helper()
	// A generous bound for a hung browser, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	doc, err := html.Parse(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, class string) bool {
	v, _ := attr(n, "class")
	for _, c := range strings.Fields(v) {
		if c == class {
			return true
		}
	}
	return false
}

// findAll lists the elements under n that match.
func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// TestHTMLInBrowser renders -o html of captures with findings (two
// scenarios, a real capture with a long connection that folds, a TLS one
// decrypted with its key log) in headless Chromium and checks the DOM
// against -o json of the same run: every finding is there, every
// connection with a finding has a ladder, and each ladder accounts for
// all of its connection's messages, drawn or folded.
func TestHTMLInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	cases := []struct {
		name string
		args []string
	}{
		{"hdr-seed-changed", []string{"../../samples/captures/hdr-seed-changed.pcapng"}},
		{"broker-mixed", []string{"../../samples/captures/broker-mixed.pcapng"}},
		{"rdkafka-two-producers", []string{"-p", "auto", "../../testdata/real/rdkafka-two-producers-mock.pcap"}},
		{"violating-tls13", []string{"-p", "37113", "--tls-keylog", "../../testdata/tls/violating-tls13.keylog", "../../testdata/tls/violating-tls13.pcap"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"analyze", "--fail-on", "never", "--no-hash"}, tc.args...)
			page, stderr, code := runKidscope(t, append(args, "-o", "html")...)
			if code != 0 {
				t.Fatalf("-o html: exit %d: %s", code, stderr)
			}
			js, _, _ := runKidscope(t, append(args, "-o", "json")...)
			var got struct {
				Findings []struct {
					Rule         string `json:"rule"`
					Frame        int64  `json:"frame"`
					ConnectionID int    `json:"connection_id"`
					APIKey       *int   `json:"api_key"`
				} `json:"findings"`
				Connections []struct {
					ID        int   `json:"id"`
					Requests  int64 `json:"requests"`
					Responses int64 `json:"responses"`
				} `json:"connections"`
			}
			if err := json.Unmarshal([]byte(js), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Findings) == 0 {
				t.Fatal("the capture has no findings: it tests nothing here")
			}
			path, _ := filepath.Abs(filepath.Join(t.TempDir(), tc.name+".html"))
			if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
			doc := dumpDOM(t, chromium, path)

			// Self-contained: no script, nothing fetched.
			for _, n := range findAll(doc, func(n *html.Node) bool { return true }) {
				if n.Data == "script" || n.Data == "link" || n.Data == "img" || n.Data == "iframe" {
					t.Errorf("a <%s> element: the file must fetch and run nothing", n.Data)
				}
				if v, ok := attr(n, "src"); ok {
					t.Errorf("src=%q: the file must fetch nothing", v)
				}
			}

			// Every finding, once.
			want := map[string]int{}
			for _, f := range got.Findings {
				want[fmt.Sprintf("%s conn %d frame 0-%d", f.Rule, f.ConnectionID, f.Frame)]++
			}
			have := map[string]int{}
			for _, li := range findAll(doc, func(n *html.Node) bool { return n.Data == "li" && hasClass(n, "finding") }) {
				rule, _ := attr(li, "data-rule")
				conn, _ := attr(li, "data-conn")
				frame, _ := attr(li, "data-frame")
				have[fmt.Sprintf("%s conn %s frame %s", rule, conn, frame)]++
			}
			for k, n := range want {
				if have[k] != n {
					t.Errorf("finding %s: %d in the page, want %d", k, have[k], n)
				}
			}
			if len(have) != len(want) {
				t.Errorf("the page lists %d distinct findings, -o json %d", len(have), len(want))
			}

			// A ladder per connection with a finding, accounting for every
			// message of it.
			messages := map[string]int64{}
			for _, c := range got.Connections {
				messages[strconv.Itoa(c.ID)] = c.Requests + c.Responses
			}
			ladders := map[string]*html.Node{}
			for _, fig := range findAll(doc, func(n *html.Node) bool { return n.Data == "figure" && hasClass(n, "ladder") }) {
				id, _ := attr(fig, "data-conn")
				ladders[id] = fig
			}
			for _, f := range got.Findings {
				id := strconv.Itoa(f.ConnectionID)
				fig := ladders[id]
				if fig == nil {
					t.Errorf("connection %s has a finding (%s) but no ladder", id, f.Rule)
					continue
				}
				arrows := findAll(fig, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "arrow") })
				var folded int64
				for _, g := range findAll(fig, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "fold") }) {
					v, _ := attr(g, "data-count")
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil || n <= 0 {
						t.Errorf("connection %s: a fold of %q messages", id, v)
					}
					folded += n
				}
				shown, _ := attr(fig, "data-shown")
				if strconv.Itoa(len(arrows)) != shown {
					t.Errorf("connection %s: %d arrows, the caption says %s drawn", id, len(arrows), shown)
				}
				if n := int64(len(arrows)) + folded; n != messages[id] {
					t.Errorf("connection %s: %d arrows + %d folded = %d, the connection has %d messages", id, len(arrows), folded, n, messages[id])
				}
				// The request or response the finding points at is drawn
				// and marked (a stream finding's frame may be no message's).
				marked := f.APIKey == nil
				for _, a := range arrows {
					if hasClass(a, "marked") {
						for _, txt := range findAll(a, func(n *html.Node) bool { return n.Data == "text" && hasClass(n, "frame") }) {
							if txt.FirstChild != nil && txt.FirstChild.Data == strconv.FormatInt(f.Frame, 10) {
								marked = true
							}
						}
					}
				}
				if !marked {
					t.Errorf("connection %s: frame %d of %s is not drawn marked", id, f.Frame, f.Rule)
				}
			}
		})
	}
}

// analyze names -o html in its help and offers it to completion; live,
// which streams, does not write it.
func TestAnalyzeHTMLFlag(t *testing.T) {
	out, _, code := runKidscope(t, "analyze", "--help")
	if code != 0 || !strings.Contains(out, "html") {
		t.Errorf("analyze --help (exit %d) does not name html:\n%s", code, out)
	}
	out, _, _ = runKidscope(t, "__complete", "analyze", "-o", "")
	if !strings.Contains(out, "html\n") {
		t.Errorf("-o completion does not offer html:\n%s", out)
	}
	out, _, _ = runKidscope(t, "__complete", "live", "-o", "")
	if strings.Contains(out, "html\n") {
		t.Errorf("live's -o completion offers html, which live does not write:\n%s", out)
	}
}
