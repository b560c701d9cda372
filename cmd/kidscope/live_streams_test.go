package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kidscope/kidscope/capture/filter"
)

// findingsMade scrapes live's metrics for the findings it has made.
func findingsMade(t *testing.T, url string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	var n float64
	if fam := fams["kidscope_findings_total"]; fam != nil {
		for _, m := range fam.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// TestLiveOutputStreams runs live on loopback with each output format
// while a crafted client breaks a header rule: standard output must parse
// as the format alone, the finding must stream where the format puts it
// (ndjson: stdout; the others: a line on stderr, none with -q), and the
// final report must hold it.
func TestLiveOutputStreams(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	fport := fakeBroker(t)
	for _, c := range []struct {
		format string
		quiet  bool
	}{
		{"json", false}, {"csv", false}, {"markdown", false}, {"table", false}, {"ndjson", false}, {"json", true},
	} {
		name := c.format
		if c.quiet {
			name += " -q"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"-i", "lo", "-p", fmt.Sprint(fport), "-o", c.format, "--duration", "60s", "--color", "never"}
			if c.quiet {
				args = append(args, "-q")
			}
			cmd, stdout, stderr, metricsURL := startLive(t, args...)
			defer cmd.Process.Kill()
			outc := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(stdout)
				outc <- string(b)
			}()
			violatingClient(t, fport)
			// The finding is final once the broker answered; wait until
			// live has made it (no time is asserted: the deadline only
			// keeps a broken live from hanging the test).
			for deadline := time.Now().Add(20 * time.Second); findingsMade(t, metricsURL) < 1; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("live made no finding; stderr %s", stderr.String())
				}
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			out := <-outc
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("live exit: %v, want 1; stderr %s", err, stderr.String())
			}
			checkFormat(t, "live -o "+name, c.format, out)
			if !strings.Contains(out, "header-id-changed") {
				t.Errorf("the report on stdout lacks the finding:\n%s", head(out))
			}
			streamed := strings.Contains(stderr.String(), "header-id-changed")
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "error ") {
					t.Errorf("a streamed finding's line on stdout: %q", l)
				}
			}
			switch {
			case c.format == "ndjson" && streamed:
				t.Errorf("ndjson streams on stdout, but stderr has the finding: %s", stderr.String())
			case c.format != "ndjson" && c.quiet && streamed:
				t.Errorf("-q, but the finding streamed on stderr: %s", stderr.String())
			case c.format != "ndjson" && !c.quiet && !streamed:
				t.Errorf("the finding did not stream on stderr: %q", stderr.String())
			}
		})
	}
}

// TestLiveNoKafka: live stopping with no Kafka decoded says so, naming the
// filter the kernel ran, and --require-kafka makes that exit 2; stdout is
// still the document alone.
func TestLiveNoKafka(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	port := freePort(t) // nothing listens there, nothing is sent there
	out, errOut, code := runKidscope(t, "live", "-i", "lo", "-p", fmt.Sprint(port), "--duration", "1s", "-o", "json", "--require-kafka")
	want := fmt.Sprintf("kidscope: no Kafka decoded: no packet matched the capture filter %q (-p or --filter widen it)\n", filter.Default([]uint16{uint16(port)}))
	// The socket takes packets from its bind until the filter is
	// attached: other tests' loopback traffic may then come in, and be
	// counted as off the broker port.
	other := fmt.Sprintf("none on broker port %d", port)
	if code != 2 || errOut != want && (!strings.HasPrefix(errOut, "kidscope: no Kafka decoded: ") || !strings.Contains(errOut, other) || strings.Count(errOut, "\n") != 1) {
		t.Errorf("live on an idle port: exit %d, stderr %q; want 2, %q", code, errOut, want)
	}
	checkFormat(t, "live -o json", "json", out)
}
