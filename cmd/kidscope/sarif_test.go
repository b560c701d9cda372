package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/internal/sarifcheck"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/samples"
)

// sarifLog is the part of a SARIF log these tests read.
type sarifLog struct {
	Runs []struct {
		Tool struct {
			Driver struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"driver"`
		} `json:"tool"`
		Invocations []struct {
			ExecutionSuccessful bool `json:"executionSuccessful"`
			ExitCode            int  `json:"exitCode"`
		} `json:"invocations"`
		Results []struct {
			RuleID    string `json:"ruleId"`
			Level     string `json:"level"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI       string `json:"uri"`
						URIBaseID string `json:"uriBaseId"`
					} `json:"artifactLocation"`
				} `json:"physicalLocation"`
				Properties struct {
					Frame int64 `json:"frame"`
				} `json:"properties"`
			} `json:"locations"`
		} `json:"results"`
	} `json:"runs"`
}

func parseSARIF(t *testing.T, out string) sarifLog {
	t.Helper()
	if err := sarifcheck.Validate([]byte(out)); err != nil {
		t.Fatalf("not valid SARIF 2.1.0: %v", err)
	}
	var log sarifLog
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Runs) != 1 || len(log.Runs[0].Invocations) != 1 {
		t.Fatalf("%d runs, want 1 with one invocation", len(log.Runs))
	}
	return log
}

// TestAnalyzeSARIFSamples: `analyze -o sarif` on every scenario that
// `kidscope samples` writes is valid SARIF 2.1.0, with one result per
// finding of `-o json`, and exits as `-o json` does, with that code in the
// log.
func TestAnalyzeSARIFSamples(t *testing.T) {
	needSamplesCommand(t)
	dir := t.TempDir()
	if _, stderr, code := runKidscope(t, "samples", dir); code != 0 {
		t.Fatalf("kidscope samples: exit %d: %s", code, stderr)
	}
	if _, err := sarifcheck.Schema(); err != nil {
		t.Fatal(err)
	}
	all := samples.All()
	if len(all) == 0 {
		t.Fatal("no scenarios")
	}
	withFindings := 0
	for _, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, s.Name+".pcap*"))
			if len(files) != 1 {
				t.Fatalf("%s: %d capture files written", s.Name, len(files))
			}
			ports := []string{"9092"}
			if len(s.Ports) > 0 {
				ports = nil
				for _, p := range s.Ports {
					ports = append(ports, strconv.Itoa(int(p)))
				}
			}
			args := []string{"analyze", "--no-progress", "-p", strings.Join(ports, ","), files[0]}
			out, stderr, code := runKidscope(t, append(args, "-o", "sarif")...)
			if code != exitOK && code != exitFindings {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			log := parseSARIF(t, out)
			run := log.Runs[0]
			if inv := run.Invocations[0]; inv.ExitCode != code || !inv.ExecutionSuccessful {
				t.Errorf("invocation says exit %d (successful %v), the command exited %d", inv.ExitCode, inv.ExecutionSuccessful, code)
			}
			jsonOut, _, jsonCode := runKidscope(t, append(args, "-o", "json")...)
			var doc struct {
				Findings []struct {
					Rule  string `json:"rule"`
					Frame int64  `json:"frame"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(jsonOut), &doc); err != nil {
				t.Fatal(err)
			}
			if jsonCode != code {
				t.Errorf("-o sarif exits %d, -o json %d", code, jsonCode)
			}
			if len(run.Results) != len(doc.Findings) {
				t.Fatalf("%d results, -o json has %d findings", len(run.Results), len(doc.Findings))
			}
			for i, r := range run.Results {
				if r.RuleID != doc.Findings[i].Rule || r.Locations[0].Properties.Frame != doc.Findings[i].Frame {
					t.Errorf("result %d: %s at frame %d, -o json: %s at %d", i, r.RuleID, r.Locations[0].Properties.Frame,
						doc.Findings[i].Rule, doc.Findings[i].Frame)
				}
			}
			if len(run.Results) > 0 {
				withFindings++
			}
		})
	}
	if withFindings == 0 {
		t.Error("no scenario gave a result")
	}
}

// TestAnalyzeSARIFFindings: docs/formats.md's CI example: a capture with an
// error finding, named relative to the working directory, exits 1 and
// its result points at that file, relative to the checkout, and at the
// finding's frame.
func TestAnalyzeSARIFFindings(t *testing.T) {
	cmd := exec.Command(binary, "analyze", "-o", "sarif", "samples/captures/hdr-seed-changed.pcapng")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFindings {
		t.Fatalf("analyze -o sarif: %v, want exit %d", err, exitFindings)
	}
	log := parseSARIF(t, string(out))
	run := log.Runs[0]
	if run.Tool.Driver.Name != "kidscope" || run.Tool.Driver.Version != kidscopeVersion() {
		t.Errorf("driver %q %q, want kidscope %q", run.Tool.Driver.Name, run.Tool.Driver.Version, kidscopeVersion())
	}
	if inv := run.Invocations[0]; inv.ExitCode != exitFindings || !inv.ExecutionSuccessful {
		t.Errorf("invocation %+v", inv)
	}
	if len(run.Results) != 1 {
		t.Fatalf("%d results, want 1", len(run.Results))
	}
	r := run.Results[0]
	loc := r.Locations[0]
	if r.RuleID != "header-id-changed" || r.Level != "error" || loc.Properties.Frame != 10 ||
		loc.PhysicalLocation.ArtifactLocation.URI != "samples/captures/hdr-seed-changed.pcapng" ||
		loc.PhysicalLocation.ArtifactLocation.URIBaseID != "%SRCROOT%" {
		t.Errorf("result %+v", r)
	}
}

// TestAnalyzeSARIFFlag: analyze takes -o sarif and names it in its help;
// another format is still refused.
func TestAnalyzeSARIFFlag(t *testing.T) {
	out, _, code := runKidscope(t, "analyze", "--help")
	if code != 0 || !strings.Contains(out, "sarif") {
		t.Errorf("analyze --help (exit %d) does not name sarif:\n%s", code, out)
	}
	if _, stderr, code := runKidscope(t, "analyze", "-o", "sarff", "x.pcap"); code != exitBadInput || !strings.Contains(stderr, "sarif") {
		t.Errorf("-o sarff: exit %d: %s", code, stderr)
	}
	out, _, _ = runKidscope(t, "__complete", "analyze", "-o", "")
	if !strings.Contains(out, "sarif\n") {
		t.Errorf("-o completion does not offer sarif:\n%s", out)
	}
}

// TestExitCodeOf: the precedence of exit codes, which the SARIF log's
// invocation states and the process exits with (finalStatus): interrupted
// over a failing finding over an input not read to its end.
func TestExitCodeOf(t *testing.T) {
	stopped := []error{errors.New("x.pcap: not a capture")}
	recovered := []error{&capture.OversizeError{}}
	for _, c := range []struct {
		sum  result.Summary
		code int
		want int
	}{
		{result.Summary{}, exitOK, exitOK},
		{result.Summary{}, exitFindings, exitFindings},
		{result.Summary{Interrupted: true}, exitOK, exitInterrupted},
		{result.Summary{Interrupted: true}, exitFindings, exitInterrupted},
		{result.Summary{Problems: stopped}, exitOK, exitBadInput},
		{result.Summary{Problems: stopped}, exitFindings, exitFindings},
		{result.Summary{Problems: recovered}, exitOK, exitOK},
	} {
		if got := exitCodeOf(&c.sum, c.code); got != c.want {
			t.Errorf("%+v, code %d: exit %d, want %d", c.sum, c.code, got, c.want)
		}
		var ee *exitError
		got := exitOK
		if err := finalStatus(&c.sum, c.code); errors.As(err, &ee) {
			got = ee.code
		}
		if got != c.want {
			t.Errorf("%+v, code %d: finalStatus exits %d, want %d", c.sum, c.code, got, c.want)
		}
	}
}
