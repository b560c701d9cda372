package main

import (
	"bytes"
	"compress/gzip"
	"context"
	bo "encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Robustness: every committed capture, mutated in the ways a damaged or
// wrong input is damaged, goes through `kidscope analyze` and `kidscope
// frames`. Whatever the bytes, kidscope must end with exit code 0, 1 or 2,
// never panic, stay within a memory bound, and on exit 2 say what is wrong
// in one line per problem that names the file (docs/design/cli.md, "Bad input").
//
// The mutations are deterministic (seeded by the file's name and the
// round), so a failure is reproduced by running the test again; the failing
// input is also copied to $TMPDIR/kidscope-mutation-failures. To keep one
// until the product is fixed, put it under testdata/mutation and name it in
// knownCrashers with what is wrong: TestMutationCrashers runs it and skips
// it with that TODO while it still fails. KIDSCOPE_MUTATION_ROUNDS=40 hunts
// longer (about 2 minutes).

const (
	// maxRSSKiB is the peak memory a run may reach on inputs of at most a
	// few hundred KB, with GOMEMLIMIT at a quarter of it. It is checked on
	// the rusage of the run, whose ru_maxrss on Linux is at least the test
	// process's own RSS (Go starts children with CLONE_VM|CLONE_VFORK, and
	// the kernel carries the shared mm's high-water mark across exec):
	// about 20–30 MB here, well under the bound.
	maxRSSKiB = 200 << 10
	// runTimeout is how long one run may take: the inputs are small.
	runTimeout = 30 * time.Second
)

// mutationRounds is how many inputs of each kind are made per file: 3, or
// KIDSCOPE_MUTATION_ROUNDS for a longer hunt (the seeds of the first 3
// rounds stay the same).
func mutationRounds() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("KIDSCOPE_MUTATION_ROUNDS"), &n); err == nil && n > 0 {
		return n
	}
	return 3
}

// mutationPorts covers the ports of every committed capture: the samples'
// and, for the real-client captures, the broker ports their sidecars name.
var mutationPorts = sync.OnceValue(func() string {
	ports := []string{"9092", "29092"}
	seen := map[uint16]bool{}
	metas, _ := filepath.Glob("../../testdata/real/*.meta.json")
	for _, m := range metas {
		var meta struct {
			Ports []uint16 `json:"ports"`
		}
		b, err := os.ReadFile(m)
		if err == nil {
			err = json.Unmarshal(b, &meta)
		}
		if err != nil {
			panic(fmt.Sprintf("%s: %v", m, err))
		}
		for _, p := range meta.Ports {
			if !seen[p] {
				seen[p] = true
				ports = append(ports, strconv.Itoa(int(p)))
			}
		}
	}
	return strings.Join(ports, ",")
})

// committedCaptures lists the capture files in the repository.
func committedCaptures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../../testdata/real/*.pcap", "../../samples/captures/*.pcap", "../../samples/captures/*.pcapng",
		"../../samples/captures/*.gz"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no committed captures under testdata/real or samples/captures")
	}
	return files
}

// mutation is one way of damaging a capture.
type mutation struct {
	name string
	make func(rng *rand.Rand, b, other []byte) []byte
}

var mutations = []mutation{
	{"bitflips", func(rng *rand.Rand, b, _ []byte) []byte { return flipBits(rng, b) }},
	{"truncated", func(rng *rand.Rand, b, _ []byte) []byte {
		return bytes.Clone(b[:rng.IntN(len(b))])
	}},
	{"spliced", func(rng *rand.Rand, b, other []byte) []byte {
		// The start of this file, then the rest of another from a random
		// offset: a mid-record join, two headers, two link types.
		out := bytes.Clone(b[:rng.IntN(len(b))])
		return append(out, other[rng.IntN(len(other)):]...)
	}},
	{"garbage", func(rng *rand.Rand, _, _ []byte) []byte {
		return randomBytes(rng, rng.IntN(64<<10))
	}},
	{"header-then-garbage", func(rng *rand.Rand, b, _ []byte) []byte {
		// The file header (and, in pcapng, the interface blocks), then
		// noise in place of the packets.
		out := bytes.Clone(b[:headerLen(b)])
		return append(out, randomBytes(rng, rng.IntN(64<<10))...)
	}},
	{"lengths", func(rng *rand.Rand, b, _ []byte) []byte {
		// Random values in the length fields of packet records or blocks:
		// zero, off by a little, huge.
		out := bytes.Clone(b)
		offs := lengthFields(out)
		for n := 1 + rng.IntN(4); n > 0 && len(offs) > 0; n-- {
			off := offs[rng.IntN(len(offs))]
			v := bo.LittleEndian.Uint32(out[off:])
			switch rng.IntN(4) {
			case 0:
				v = 0
			case 1:
				v += uint32(rng.IntN(9)) - 4
			case 2:
				v = rng.Uint32()
			default:
				v = 0xffffffff - uint32(rng.IntN(16))
			}
			bo.LittleEndian.PutUint32(out[off:], v)
		}
		return out
	}},
	{"gzip-of-bitflips", func(rng *rand.Rand, b, _ []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(flipBits(rng, b))
		zw.Close()
		out := buf.Bytes()
		if rng.IntN(2) == 0 {
			out = out[:len(out)-1-rng.IntN(min(len(out)-1, 64))] // and a cut gzip stream
		}
		return out
	}},
}

// flipBits flips 1 to 32 bits at random offsets.
func flipBits(rng *rand.Rand, b []byte) []byte {
	out := bytes.Clone(b)
	for n := 1 + rng.IntN(32); n > 0 && len(out) > 0; n-- {
		i := rng.IntN(len(out))
		out[i] ^= 1 << rng.IntN(8)
	}
	return out
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// headerLen is the length of a capture's header: 24 bytes for pcap; for
// pcapng, the blocks before the first packet block.
func headerLen(b []byte) int {
	if len(b) < 12 || bo.LittleEndian.Uint32(b) != 0x0a0d0d0a {
		return min(24, len(b))
	}
	off := 0
	for off+12 <= len(b) {
		typ := bo.LittleEndian.Uint32(b[off:])
		l := int(bo.LittleEndian.Uint32(b[off+4:]))
		if typ == 6 || typ == 3 || l < 12 || off+l > len(b) {
			break
		}
		off += l
	}
	return off
}

// lengthFields returns the offsets of the little-endian 32-bit length
// fields of a capture: each pcap record's captured and original length,
// each pcapng block's total length (both copies) and, in packet blocks,
// the captured and original length.
func lengthFields(b []byte) []int {
	var offs []int
	if len(b) >= 24 && bo.LittleEndian.Uint32(b) == 0x0a0d0d0a {
		for off := 0; off+12 <= len(b); {
			typ := bo.LittleEndian.Uint32(b[off:])
			l := int(bo.LittleEndian.Uint32(b[off+4:]))
			if l < 12 || off+l > len(b) {
				break
			}
			offs = append(offs, off+4, off+l-4)
			if typ == 6 && l >= 32 {
				offs = append(offs, off+20, off+24)
			}
			off += l
		}
		return offs
	}
	if len(b) < 24 || bo.LittleEndian.Uint32(b) != 0xa1b2c3d4 && bo.LittleEndian.Uint32(b) != 0xa1b23c4d {
		return nil
	}
	for off := 24; off+16 <= len(b); {
		offs = append(offs, off+8, off+12)
		off += 16 + int(bo.LittleEndian.Uint32(b[off+8:]))
	}
	return offs
}

// seedOf makes a file's mutations depend on its name only.
func seedOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// runResult is what one run of kidscope did.
type runResult struct {
	code    int
	stdout  string
	stderr  string
	maxRSS  int64 // KiB
	timeout bool
}

// runLimited runs kidscope with a soft memory limit and a time limit and
// reports its peak RSS.
func runLimited(t *testing.T, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	r := launch(ctx, t, []string{fmt.Sprintf("GOMEMLIMIT=%dMiB", maxRSSKiB>>12), "NO_COLOR=1"}, args...)
	return runResult{stdout: r.stdout, stderr: r.stderr, timeout: r.timeout, code: r.code, maxRSS: r.rss >> 10}
}

// framesSummary is the closing line `frames -o csv` writes to stderr.
var framesSummary = regexp.MustCompile(`^\d+ packets, \d+ bytes, \d+ connections, `)

// checkRun applies the rules every run must follow; it reports whether
// the run followed them.
func checkRun(t *testing.T, what, file string, r runResult) bool {
	t.Helper()
	ps := problems(file, r)
	for _, p := range ps {
		t.Errorf("%s: %s", what, p)
	}
	return len(ps) == 0
}

// problems lists the rules a run broke.
func problems(file string, r runResult) []string {
	var out []string
	fail := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	switch {
	case r.timeout:
		fail("still running after %v", runTimeout)
	case r.code < 0:
		fail("killed by a signal (%s)", firstLine(r.stderr))
	case r.code > 2:
		fail("exit code %d, want 0, 1 or 2", r.code)
	}
	if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
		fail("panicked:\n%s", clip(r.stderr, 3000))
	}
	if r.maxRSS > maxRSSKiB {
		fail("peak RSS %d MiB, over %d MiB", r.maxRSS>>10, maxRSSKiB>>10)
	}
	if r.code == 2 {
		// One line per problem, each starting with "kidscope:", at least
		// one naming the file; nothing else but the frames summary.
		var lines []string
		for _, l := range strings.Split(strings.TrimRight(r.stderr, "\n"), "\n") {
			if l != "" && !framesSummary.MatchString(l) {
				lines = append(lines, l)
			}
		}
		named := false
		for _, l := range lines {
			if !strings.HasPrefix(l, "kidscope: ") || len(l) > 400 {
				fail("exit 2 with a stderr line that is not one kidscope line: %q", clip(l, 400))
			}
			named = named || strings.Contains(l, filepath.Base(file))
		}
		if !named {
			fail("exit 2 without a line naming %s; stderr:\n%s", filepath.Base(file), clip(r.stderr, 2000))
		}
		if len(lines) > 12 {
			fail("exit 2 with %d lines on stderr, want one per problem:\n%s", len(lines), clip(r.stderr, 2000))
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// knownCrashers are mutated inputs (under testdata/mutation) that make
// kidscope fail one of the rules today, by file name, with what to do.
// Their cases are skipped until the product is fixed.
var knownCrashers = map[string]string{}

// TestMutatedCaptures feeds mutated versions of every committed capture
// through `kidscope analyze` and `kidscope frames`.
func TestMutatedCaptures(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the mutation runs take about 15 s")
	}
	files := committedCaptures(t)
	data := make([][]byte, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data[i] = b
	}
	dir := t.TempDir()
	rounds := mutationRounds()
	for i, f := range files {
		name := filepath.Base(f)
		other := data[(i+1)%len(data)]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var codes [3]int
			var peak int64
			for round := 0; round < rounds; round++ {
				for j, m := range mutations {
					rng := rand.New(rand.NewPCG(seedOf(name), uint64(round*len(mutations)+j)))
					input := m.make(rng, data[i], other)
					in := filepath.Join(dir, fmt.Sprintf("%s.%s.%d", name, m.name, round))
					if todo, ok := knownCrashers[filepath.Base(in)]; ok {
						t.Logf("skipping %s: TODO: %s", filepath.Base(in), todo)
						continue
					}
					if err := os.WriteFile(in, input, 0o644); err != nil {
						t.Fatal(err)
					}
					// analyze writes the table (with info findings) and JSON in
					// turn; frames writes CSV; one worker and three in turn,
					// apart from the format, so that each format meets both.
					workers := []string{"--workers", "1"}
					if round%2 == 0 {
						workers[1] = "3"
					}
					analyze := []string{"analyze", "-p", mutationPorts(), "-v"}
					if j%2 == 1 {
						analyze = []string{"analyze", "-p", mutationPorts(), "-o", "json"}
					}
					analyze = append(append(analyze, workers...), in)
					frames := append(append([]string{"frames", "-p", mutationPorts(), "-o", "csv"}, workers...), in)
					for _, args := range [][]string{analyze, frames} {
						what := fmt.Sprintf("%s %s", strings.Join(args[:len(args)-1], " "), filepath.Base(in))
						r := runLimited(t, args...)
						if !checkRun(t, what, in, r) {
							keepCrasher(t, in, input)
						}
						if r.code >= 0 && r.code <= 2 {
							codes[r.code]++
						}
						peak = max(peak, r.maxRSS)
					}
				}
			}
			t.Logf("exit 0: %d, exit 1: %d, exit 2: %d runs; largest peak RSS %.1f MiB", codes[0], codes[1], codes[2], float64(peak)/1024)
		})
	}
}

// keepCrasher copies a failing input where it can be looked at.
func keepCrasher(t *testing.T, path string, input []byte) {
	t.Helper()
	keep := filepath.Join(os.TempDir(), "kidscope-mutation-failures")
	if err := os.MkdirAll(keep, 0o755); err == nil {
		dst := filepath.Join(keep, filepath.Base(path))
		if os.WriteFile(dst, input, 0o644) == nil {
			t.Logf("the failing input is kept in %s (to commit under cmd/kidscope/testdata/mutation/ with a TODO)", dst)
		}
	}
}

// TestMutationCrashers runs the inputs kept under testdata/mutation, which
// once broke a rule of TestMutatedCaptures. One listed in knownCrashers is
// skipped with its TODO while it still breaks one, and passes once fixed.
func TestMutationCrashers(t *testing.T) {
	files, _ := filepath.Glob("testdata/mutation/*")
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			var ps []string
			for _, cmd := range []string{"analyze", "frames"} {
				for _, p := range problems(f, runLimited(t, cmd, "-p", mutationPorts(), f)) {
					ps = append(ps, cmd+": "+p)
				}
			}
			todo, known := knownCrashers[name]
			switch {
			case len(ps) > 0 && known:
				t.Skipf("TODO: %s\n(%s)", todo, firstLine(ps[0]))
			case len(ps) > 0:
				t.Error(strings.Join(ps, "\n"))
			case known:
				t.Logf("passes now: its knownCrashers entry can go")
			}
		})
	}
}

// TestUnreadableInputs: inputs that cannot be read at all end with exit 2
// and one line naming the file.
func TestUnreadableInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inputs := []string{
		filepath.Join(dir, "does-not-exist.pcap"),
		dir, // a directory
		write("empty.pcap", nil),
		write("notes.txt", []byte("these are not the packets you are looking for\n")),
		write("three-bytes.pcap", []byte{0xd4, 0xc3, 0xb2}),
		write("gzip-of-text.pcap.gz", gzipOf([]byte("hello\n"))),
		write("gzip-cut.pcap.gz", gzipOf(bytes.Repeat([]byte{0xd4, 0xc3, 0xb2, 0xa1}, 100))[:20]),
	}
	for _, in := range inputs {
		for _, cmd := range []string{"analyze", "frames"} {
			r := runLimited(t, cmd, in)
			what := cmd + " " + filepath.Base(in)
			if !checkRun(t, what, in, r) {
				continue
			}
			if r.code != 2 {
				t.Errorf("%s: exit %d, want 2", what, r.code)
			}
			if n := strings.Count(strings.TrimRight(r.stderr, "\n"), "\n"); n != 0 {
				t.Errorf("%s: %d lines on stderr, want one:\n%s", what, n+1, r.stderr)
			}
		}
	}
}

func gzipOf(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}
