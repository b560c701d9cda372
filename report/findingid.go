package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/kidscope/kidscope/rules"
)

// A finding's ID names it whoever reports it: analyze, live, the agent
// that published it and every fleet member that reads it, once or twice.
// A consumer of the fleet's stream, which Kafka delivers at least once,
// drops a finding whose ID it has seen (docs/fleet.md).
//
// The recipe (docs/formats.md#finding-ids) is fixed, and its version is
// the first field it hashes: a change of what is hashed, or how, is a new
// version, never the same one. The ID is the first 16 bytes of SHA-256
// over these fields, each written as a netstring (its length in bytes in
// decimal, ':', its bytes, ','), so that no text from a capture, NUL or
// comma included, can make two lists hash alike; as 32 lowercase
// hexadecimal digits: 128 bits make a collision among the findings of a
// fleet negligible (one in 2^64 around 2^32 findings), and the text is not
// a UUID in either form kidscope prints IDs in (22 base64 characters, or
// 8-4-4-4-12 with hyphens), so that it is never read as a client's ID.
//
//  1. "kidscope-finding-id/1"
//  2. the agent, and 3. its run ("" and "" for a run that publishes
//     nothing)
//  4. the name of the file the finding's frame is in, as the agent (or
//     analyze) reports it: not the fleet's agent:file
//  5. the frame number, in decimal
//  6. the rule ID
//  7. the client endpoint and 8. the broker endpoint (ip:port, [ip]:port)
//  9. to 14. the expected value and 15. to 20. the seen value, each as
//     its kind's name (ValueKindNames, "" for none), its ID in Kafka's
//     base64 form whatever --uuid says, its text, its address ("" for
//     none), its version and its code in decimal
//  21. the answer's state (AnswerStateNames, "" for a finding about no
//     request) and 22. its error codes in decimal, space-separated
//  23. the stream kind (StreamKindNames, "" for a finding about a
//     request) and 24. its side ("to-broker" or "to-client"; "" about a
//     request)
//
// Not hashed: what the fleet numbers (connection numbers, files), the
// frame's time (the frame names it), the related frames and the count
// (evidence of the same finding), and the words (a later kidscope may
// word it better).
const findingIDVersion = "kidscope-finding-id/1"

// Origin is what a finding's file stands for in its ID: the agent and run
// that read it ("" for a run that publishes nothing) and its name as they
// report it.
type Origin struct {
	Agent, Run, File string
}

// AgentOrigins are the origins of the files of an agent's run: files
// named as the run names them (Analysis.Files), read by agent in run.
func AgentOrigins(agent, run string, files []string) []Origin {
	out := make([]Origin, len(files))
	for i, f := range files {
		out[i] = Origin{Agent: agent, Run: run, File: f}
	}
	return out
}

// originOf is the origin of file i: origins[i], or the file as files
// names it, of no agent.
func originOf(files []string, origins []Origin, i int) Origin {
	if i >= 0 && i < len(origins) {
		return origins[i]
	}
	return Origin{File: fileName(files, i)}
}

// FindingID is the stable ID of f, whose frame (f.At) is in the file o
// stands for.
func FindingID(o Origin, f *rules.Finding) string {
	sum := sha256.Sum256(findingIDInput(o, f))
	return hex.EncodeToString(sum[:16])
}

// findingIDInput is the list FindingID hashes.
func findingIDInput(o Origin, f *rules.Finding) []byte {
	b := make([]byte, 0, 512)
	field := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
		b = append(b, ',')
	}
	num := func(n int64) { field(strconv.FormatInt(n, 10)) }
	value := func(v rules.Value) {
		field(nameOf(ValueKindNames, v.Kind, rules.ValueNone))
		field(v.ID.String())
		field(v.Text)
		addr := ""
		if v.Addr.IsValid() {
			addr = v.Addr.String()
		}
		field(addr)
		num(int64(v.Version))
		num(int64(v.Code))
	}
	field(findingIDVersion)
	field(o.Agent)
	field(o.Run)
	field(o.File)
	num(f.At.Frame)
	field(f.Rule)
	field(f.Conn.Client.String())
	field(f.Conn.Broker.String())
	value(f.Expected)
	value(f.Seen)
	field(nameOf(AnswerStateNames, f.Answer.State, rules.NotAnswerable))
	var codes []byte
	for i, c := range f.Answer.Codes {
		if i > 0 {
			codes = append(codes, ' ')
		}
		codes = strconv.AppendInt(codes, int64(c), 10)
	}
	field(string(codes))
	field(nameOf(StreamKindNames, f.Stream.Kind, rules.AboutRequest))
	side := ""
	if f.Stream.Kind != rules.AboutRequest {
		side = f.Stream.Side.String()
	}
	field(side)
	return b
}

// nameOf is v's name in names, "" for none; a value without a name (a
// kind added to the rules, not to the table) is named by its number, so
// that it is still told apart.
func nameOf[T comparable](names Names[T], v, none T) string {
	if v == none {
		return ""
	}
	if s, ok := names.Name(v); ok {
		return s
	}
	return fmt.Sprintf("unnamed-%v", v)
}
