package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// Report is the part of `kidscope analyze -o json` that a load's
// expectations are compared with.
type Report struct {
	Summary struct {
		Connections int64 `json:"connections"`
		Requests    int64 `json:"requests"`
		Responses   int64 `json:"responses"`
		Unmatched   int64 `json:"unmatched"`
		Unanswered  int64 `json:"unanswered"`
		Gaps        int64 `json:"gaps"`
		Malformed   int64 `json:"malformed"`
		NotKafka    int64 `json:"not_kafka"`
	} `json:"summary"`
	Findings    []ReportFinding `json:"findings"`
	Connections []struct {
		Client string  `json:"client"`
		TLS    *string `json:"tls"`
	} `json:"connections"`
}

// ReportFinding is one finding of the report.
type ReportFinding struct {
	Rule       string `json:"rule"`
	Severity   string `json:"severity"`
	Frame      int64  `json:"frame"`
	Connection struct {
		Client string `json:"client"`
		Broker string `json:"broker"`
	} `json:"connection"`
	APIKey        *int16  `json:"api_key"`
	APIVersion    *int16  `json:"api_version"`
	CorrelationID *int32  `json:"correlation_id"`
	BrokerAnswer  *string `json:"broker_answer"`
}

func (f ReportFinding) String() string {
	return findingText(f.Rule, f.Severity, f.Connection.Client, f.Connection.Broker, f.Frame, f.APIKey, f.APIVersion, f.CorrelationID, f.BrokerAnswer)
}

func (f ExpectedFinding) String() string {
	return findingText(f.Rule, f.Severity, f.Client, f.Broker, f.Frame, f.APIKey, f.APIVersion, f.CorrelationID, f.BrokerAnswer)
}

func findingText(rule, sev, client, broker string, frame int64, key, ver *int16, corr *int32, answer *string) string {
	s := fmt.Sprintf("%s %s %s->%s frame %d", sev, rule, client, broker, frame)
	if key != nil && ver != nil && corr != nil {
		s += fmt.Sprintf(" key %d v%d corr %d", *key, *ver, *corr)
	}
	switch {
	case answer != nil:
		s += " answer " + *answer
	case key != nil:
		s += " answer null"
	}
	return s
}

// compare lists how a report differs from what the load holds: error and
// warning findings must be the planted ones exactly, the info findings the
// ones made by design (rule, client and frame), and the summary must count
// every connection and whole message, with no gap, malformed message,
// unanswered request or not-Kafka connection.
func compare(rep *Report, exp *Expectation) []string {
	var got, gotInfo, want, wantInfo []string
	for _, f := range rep.Findings {
		if f.Severity == "info" {
			gotInfo = append(gotInfo, fmt.Sprintf("%s %s frame %d", f.Rule, f.Connection.Client, f.Frame))
		} else {
			got = append(got, f.String())
		}
	}
	for _, f := range exp.Findings {
		want = append(want, f.String())
	}
	for _, f := range exp.InfoFindings {
		wantInfo = append(wantInfo, fmt.Sprintf("%s %s frame %d", f.Rule, f.Client, f.Frame))
	}
	var diffs []string
	diffs = append(diffs, diffLists("error and warning findings", got, want)...)
	diffs = append(diffs, diffLists("info findings", gotInfo, wantInfo)...)
	s := rep.Summary
	if s.Requests != exp.Requests || s.Responses != exp.Responses || s.Unmatched != exp.Unmatched ||
		s.Connections != int64(exp.Connections) {
		diffs = append(diffs, fmt.Sprintf("summary: %d requests, %d responses (%d unmatched), %d connections; the load has %d, %d (%d), %d",
			s.Requests, s.Responses, s.Unmatched, s.Connections, exp.Requests, exp.Responses, exp.Unmatched, exp.Connections))
	}
	// Every connection decrypted, with the suite of the load (or none).
	wrongTLS := 0
	for _, c := range rep.Connections {
		if got := ""; c.TLS == nil && exp.TLS != "" || c.TLS != nil && *c.TLS != exp.TLS {
			if c.TLS != nil {
				got = *c.TLS
			}
			if wrongTLS++; wrongTLS <= 3 {
				diffs = append(diffs, fmt.Sprintf("connection %s: TLS %q, the load has %q", c.Client, got, exp.TLS))
			}
		}
	}
	if wrongTLS > 3 {
		diffs = append(diffs, fmt.Sprintf("%d connections in all with another TLS than the load's", wrongTLS))
	}
	if s.Gaps+s.Malformed+s.Unanswered+s.NotKafka != 0 {
		diffs = append(diffs, fmt.Sprintf("summary: %d gaps, %d malformed, %d unanswered, %d not Kafka; the load has none",
			s.Gaps, s.Malformed, s.Unanswered, s.NotKafka))
	}
	return diffs
}

// diffLists says what is in one list and not in the other (ten of each at
// most), or nothing when they hold the same items.
func diffLists(what string, got, want []string) []string {
	count := map[string]int{}
	for _, s := range got {
		count[s]++
	}
	for _, s := range want {
		count[s]--
	}
	var out []string
	extra, missing := 0, 0
	for _, s := range sorted(got) {
		if count[s] > 0 {
			count[s]--
			if extra++; extra <= 10 {
				out = append(out, fmt.Sprintf("%s: listed, not expected: %s", what, s))
			}
		}
	}
	for _, s := range sorted(want) {
		if count[s] < 0 {
			count[s]++
			if missing++; missing <= 10 {
				out = append(out, fmt.Sprintf("%s: expected, not listed: %s", what, s))
			}
		}
	}
	if extra+missing > 20 {
		out = append(out, fmt.Sprintf("%s: %d listed and %d expected differ in all", what, extra, missing))
	}
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// checkFiles compares a report file with an expectations file, for
// -check.
func checkFiles(reportFile, expectFile string) ([]string, *Expectation, error) {
	var rep Report
	var exp Expectation
	for _, x := range []struct {
		file string
		v    any
	}{{reportFile, &rep}, {expectFile, &exp}} {
		b, err := os.ReadFile(x.file)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(b, x.v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", x.file, err)
		}
	}
	return compare(&rep, &exp), &exp, nil
}
