package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/kidscope/kidscope/internal/wireshark"
)

// tsharkPDU is one Kafka message tshark dissected.
type tsharkPDU struct {
	request      bool
	key, version string // requests only
	corr         string
}

func (p tsharkPDU) String() string {
	if p.request {
		return fmt.Sprintf("request key %s v%s corr %s", p.key, p.version, p.corr)
	}
	return "response corr " + p.corr
}

// tsharkFrame is what tshark makes of one frame that holds Kafka messages.
type tsharkFrame struct {
	pdus      []tsharkPDU
	errors    []int16 // kafka.error of every message in the frame, in order
	malformed bool
}

// runTshark has tshark dissect Kafka on the broker ports and returns, by
// frame number, the frames in which it found Kafka messages.
func runTshark(t *testing.T, tshark, file string, ports []uint16) map[int]*tsharkFrame {
	t.Helper()
	broker := map[string]bool{}
	for _, p := range ports {
		broker[strconv.Itoa(int(p))] = true
	}
	rows, err := wireshark.Fields(tshark, file, ports, "frame.number", "tcp.dstport", "kafka.request_key", "kafka.api_version",
		"kafka.correlation_id", "kafka.error", "_ws.malformed")
	if err != nil {
		t.Fatal(err)
	}
	frames := map[int]*tsharkFrame{}
	for _, f := range rows {
		corrs := f[4]
		if len(corrs) == 0 {
			continue // no Kafka message in this frame
		}
		if len(f[0]) != 1 || len(f[1]) != 1 {
			t.Fatalf("tshark row %q", f)
		}
		n, err := strconv.Atoi(f[0][0])
		if err != nil {
			t.Fatalf("tshark row %q", f)
		}
		tf := &tsharkFrame{malformed: len(f[6]) > 0}
		request := broker[f[1][0]]
		keys, vers := f[2], f[3]
		for i, c := range corrs {
			p := tsharkPDU{request: request, corr: c}
			if request {
				if i < len(keys) {
					p.key = keys[i]
				}
				if i < len(vers) {
					p.version = vers[i]
				}
			}
			tf.pdus = append(tf.pdus, p)
		}
		for _, e := range f[5] {
			v, err := strconv.ParseInt(e, 10, 16)
			if err != nil {
				t.Fatalf("tshark error code %q", e)
			}
			tf.errors = append(tf.errors, int16(v))
		}
		frames[n] = tf
	}
	return frames
}

func (m frameMsg) String() string {
	if m.Direction == "request" {
		k, v := "?", "?"
		if m.APIKey != nil {
			k = strconv.Itoa(int(*m.APIKey))
		}
		if m.APIVersion != nil {
			v = strconv.Itoa(int(*m.APIVersion))
		}
		return fmt.Sprintf("request key %s v%s corr %d", k, v, m.CorrelationID)
	}
	return fmt.Sprintf("response corr %d", m.CorrelationID)
}

// compareWithTshark requires, frame by frame, kidscope's frames and tshark
// to list the same Kafka messages (direction, API key, version and
// correlation ID of requests; correlation ID of responses), wherever tshark
// does not call the frame malformed. tshark 4.0 does not know many of the
// versions these clients send; it still reads their headers, which is what
// is compared, but a frame it flags malformed is left out, and counted.
func compareWithTshark(t *testing.T, ours []frameMsg, theirs map[int]*tsharkFrame) {
	t.Helper()
	byFrame := map[int][]string{}
	for _, m := range ours {
		byFrame[m.Frame] = append(byFrame[m.Frame], m.String())
	}
	frames := map[int]bool{}
	for n := range byFrame {
		frames[n] = true
	}
	for n := range theirs {
		frames[n] = true
	}
	compared, malformed, bad := 0, 0, 0
	for _, n := range slices.Sorted(maps.Keys(frames)) {
		tf := theirs[n]
		if tf != nil && tf.malformed {
			malformed++
			continue
		}
		var want []string
		if tf != nil {
			for _, p := range tf.pdus {
				want = append(want, p.String())
			}
		}
		got := byFrame[n]
		if !slices.Equal(sortedStrings(got), sortedStrings(want)) {
			bad++
			if bad <= 10 {
				t.Errorf("frame %d: kidscope lists %q, tshark %q", n, got, want)
			}
			continue
		}
		compared += len(got)
	}
	if bad > 10 {
		t.Errorf("%d frames differ in all", bad)
	}
	switch {
	case compared == 0 && malformed == 0:
		t.Errorf("no message compared with tshark")
	case compared == 0:
		t.Logf("tshark 4.0 calls every frame with a Kafka message malformed (%d): nothing compared", malformed)
	}
	t.Logf("tshark: %d messages agree; %d frames tshark calls malformed left out", compared, malformed)
}

// compareErrorCodes compares the error codes of responses with tshark's
// kafka.error, in frames that hold one Kafka response of a version tshark
// dissects (wireshark.Reads) and that it does not call malformed.
//
// When `kidscope frames -o json` prints every error code of a response
// (error_codes, in wire order) the two lists must be equal: that is the
// comparison to have once frames prints them. Until then frames prints
// error_code, the top-level code (null where the API has none): a code it
// prints must be one of tshark's for that frame. If it prints none, nothing
// is compared.
func compareErrorCodes(t *testing.T, ours []frameMsg, theirs map[int]*tsharkFrame) {
	t.Helper()
	perFrame := map[int]int{}
	for _, m := range ours {
		perFrame[m.Frame]++
	}
	compared, withCodes := 0, 0
	for _, m := range ours {
		if m.Direction != "response" || m.APIKey == nil || m.APIVersion == nil || perFrame[m.Frame] != 1 {
			continue
		}
		tf := theirs[m.Frame]
		if tf == nil || tf.malformed || len(tf.pdus) != 1 || !wireshark.Reads(*m.APIKey, *m.APIVersion) {
			continue
		}
		// kidscope lists the top-level code where the version has one,
		// else the distinct codes of the items; tshark lists every code
		// field. Each of kidscope's is one of tshark's, and an answer
		// with codes has some in both.
		var got, want []int16
		for _, c := range m.ErrorCodes {
			got = append(got, c.Code)
		}
		for _, c := range tf.errors {
			if !slices.Contains(want, c) {
				want = append(want, c)
			}
		}
		compared++
		if len(got) > 0 {
			withCodes++
		}
		missing := len(got) == 0 && len(want) > 0
		for _, c := range got {
			missing = missing || !slices.Contains(want, c)
		}
		if missing {
			t.Errorf("frame %d: %s: kidscope's error codes %v, tshark's %v", m.Frame, m, got, want)
		}
		if m.ErrorCode != nil && !slices.Contains(want, *m.ErrorCode) {
			t.Errorf("frame %d: %s: kidscope's error_code %d is none of tshark's %v", m.Frame, m, *m.ErrorCode, want)
		}
	}
	t.Logf("error codes: %d responses compared with tshark, %d of them with codes", compared, withCodes)
}
